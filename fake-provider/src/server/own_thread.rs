//! A server on a thread of its own, with its own single-threaded runtime.
//!
//! A harness that starts the provider in-process (the live driver, `--client` runs) would
//! otherwise serve it on its own runtime: on a current-thread runtime the provider's half of
//! every exchange (HTTP parse and encode, the model, the answer) then runs on the very thread
//! that drives the client, and a run uses one core however many the host has. On its own
//! thread the provider runs beside the client, as a provider in its own process does.

use super::{serve_listener, ServeError, ServerHandle, ServerOptions};
use crate::config::ProviderConfig;
use std::net::SocketAddr;

/// Starts a server on `addr` (port 0 picks one) on a thread of its own with these options.
/// The address is bound before this returns, so a client may connect at once. Stopped like
/// [`super::spawn_ephemeral`]'s: by [`ServerHandle::shutdown`] or a drop.
pub fn spawn_on_thread(
    config: ProviderConfig,
    options: ServerOptions,
    addr: SocketAddr,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    config.validate()?;
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    // The accept loop is a task of the thread's runtime, so its handle can be awaited from
    // any runtime; the thread drives that runtime until the loop ends.
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
    let task = runtime.spawn(async move {
        let served = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => {
                serve_listener(config, options, listener, async move {
                    let _ = rx.await;
                })
                .await
            }
            Err(e) => Err(ServeError::Io(e)),
        };
        let _ = ended_tx.send(());
        served
    });
    std::thread::Builder::new()
        .name("stampede-provider".into())
        .spawn(move || {
            runtime.block_on(async {
                let _ = ended_rx.await;
            });
        })?;
    Ok((
        bound,
        ServerHandle {
            stop: Some(tx),
            task: Some(task),
            addr: bound,
        },
    ))
}
