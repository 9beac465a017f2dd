//! A live run's calls to the provider's control plane are bounded: an answer that never
//! ends is refused at a size (it took 24 GB in 20 s), naming the call, and a journal that
//! goes back on itself is refused rather than read in a loop.

use std::time::Duration;

use stampede_sim::live_driver::provider::Provider;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves every connection with `answer`'s head, then `body` forever (`endless`) or once.
async fn serve(head: &'static str, body: &'static [u8], endless: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                loop {
                    if socket.write_all(body).await.is_err() || !endless {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn an_endless_journal_answer_is_refused_at_a_size() {
    // One chunk of journal lines, sent again and again: an answer without end.
    let lines = "{\"seq\": 1}\n".repeat(100);
    let chunk = format!("{:x}\r\n{lines}\r\n", lines.len());
    let url = serve(
        "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n",
        Box::leak(chunk.into_bytes().into_boxed_slice()),
        true,
    )
    .await;
    let read = tokio::time::timeout(Duration::from_secs(60), Provider::attach(&url).journal(0))
        .await
        .expect("refused well before a minute");
    let e = read.expect_err("an endless answer is refused").to_string();
    assert!(e.contains("larger than 64 MiB") && e.contains(&url), "{e}");
}

#[tokio::test]
async fn a_journal_page_that_goes_back_is_refused() {
    // Every page says more follow and ends at seq 3: asked for what follows 3, it answers
    // the same page again.
    let url = serve(
        "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nx-stampede-journal-more: true\r\ncontent-length: 33\r\n\r\n",
        b"{\"seq\": 1}\n{\"seq\": 2}\n{\"seq\": 3}\n",
        false,
    )
    .await;
    let read = tokio::time::timeout(Duration::from_secs(60), Provider::attach(&url).journal(0))
        .await
        .expect("refused at once");
    let e = read
        .expect_err("a page that goes back is refused")
        .to_string();
    assert!(e.contains("after seq 3 ended at seq 3"), "{e}");
}
