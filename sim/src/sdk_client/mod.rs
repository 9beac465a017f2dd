//! Clients that are not Stampede's core, in the simulator: an SDK's own retries, and
//! frameworks stacked over it (`[[client.layers]]`), played in virtual time against the
//! provider model with the workload's arrivals and `client.workers` workers (a thread pool
//! running one call at a time each, as the examples' drivers do).
//!
//! A call runs its layers outermost first: an attempt of an outer layer is the inner
//! layer's whole retry sequence. When the innermost layer gives up it hands the last error
//! out, and the next layer decides, on the same error, whether to run the inner sequence
//! again. So three layers of three attempts over a persistent 429 cost 27 attempts, and the
//! provider counts them all. These clients send no idempotency key and no attribution, as
//! the SDKs do; `x-stainless-retry-count` carries the innermost layer's retry number.

pub mod cubic;
pub mod layer;
pub mod router;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use rand_chacha::ChaCha8Rng;
use stampede_core::{Millis, Name, Reason, Route, Terminal, TerminalStatus};
use stampede_provider::model::{Answer, Request, RequestRoute};
use stampede_reports::UnfinishedRow;

use crate::driver_common::abort::AbortWatch;
use crate::driver_common::SCENARIO_EPOCH_UNIX_MS;
use crate::measure::{request_route, Ended, Group, Measurement, SentBy};
use crate::rng;
use crate::scenario::Scenario;
use crate::sink::AttemptSink;
use crate::virtual_driver::fleet::replica_of;
use crate::virtual_driver::provider_set::ProviderSet;
use crate::virtual_driver::{DriverError, VirtualRun};
use crate::workload::{Arrival, Arrivals};
pub use layer::{sdk_preset, BudgetState, Failure, RetryBudget, RetryLayer, SDK_PRESETS};
use router::{Router, RouterCall, Verdict};

/// The `seq` of an attempt refused in the client (client-side throttling): it never reached
/// the provider. The edge's seqs start at 1.
const LOCAL: u64 = 0;

/// Workers when neither the scenario nor the preset says (the examples' default).
pub const DEFAULT_WORKERS: u32 = 8;

/// One instance of the client (`client.replicas` of them): its own workers, and the state
/// each layer keeps across its calls (budgets, rate limiters, routers' deployment health).
struct Instance {
    waiting: VecDeque<Arrival>,
    busy: usize,
    budgets: Vec<Option<(RetryBudget, BudgetState)>>,
    limiters: Vec<Option<cubic::CubicLimiter>>,
    routers: Vec<Option<Router>>,
}

/// The calls in progress, each in a slot that events name by its index. A finished call's
/// slot is reused, so memory follows the calls in flight, not every call a run makes (a
/// slot per call ever started held about 400 bytes of each request of a run: 4 GB of a
/// 10-million-request backlog). A call has exactly one event pending at a time (each step
/// schedules the next, and the last schedules none), so no event names a slot after its
/// call ended.
#[derive(Default)]
struct Calls {
    slots: Vec<Option<Call>>,
    free: Vec<usize>,
    /// Calls started so far: the next call's `started`.
    started: u64,
}

impl Calls {
    /// Places `call`; returns its slot.
    fn start(&mut self, mut call: Call) -> usize {
        call.started = self.started;
        self.started += 1;
        match self.free.pop() {
            Some(slot) => {
                debug_assert!(self.slots[slot].is_none());
                self.slots[slot] = Some(call);
                slot
            }
            None => {
                self.slots.push(Some(call));
                self.slots.len() - 1
            }
        }
    }

    fn get_mut(&mut self, slot: usize) -> Option<&mut Call> {
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    /// Ends the call in `slot`; its slot is reused.
    fn end(&mut self, slot: usize) -> Option<Call> {
        let call = self.slots.get_mut(slot)?.take()?;
        self.free.push(slot);
        Some(call)
    }

    /// The calls still open, in the order they started.
    fn open(&self) -> Vec<&Call> {
        let mut open: Vec<&Call> = self.slots.iter().flatten().collect();
        open.sort_unstable_by_key(|c| c.started);
        open
    }
}

/// One call in progress.
struct Call {
    /// Calls started before it (their order, which a reused slot does not keep).
    started: u64,
    /// The instance running it.
    replica: usize,
    arrival: Arrival,
    /// Attempts made by each layer in its current sequence, outermost first.
    attempts: Vec<u32>,
    /// Each router layer's place (group, deployment in flight), outermost first.
    route: Vec<RouterCall>,
    /// What the call's last retry took from each layer's budget (tokens, 0 when none): a
    /// quota gives it back when the call succeeds.
    taken: Vec<u32>,
    /// Attempts that reached the provider, all layers.
    sent: u32,
    first_sent_at: Option<Millis>,
    last_status: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// Put the call's next attempt on the wire.
    Send,
    /// The attempt `seq` ended at the provider's side; `ok` when the call got its answer.
    /// `layer`: the innermost layer that sees the outcome (a router that found no healthy
    /// deployment fails its attempt before the layers under it run).
    Heard {
        /// The provider that answered (index in the run's `ProviderSet`; 0 for a local
        /// refusal).
        provider: u8,
        seq: u64,
        ok: bool,
        failure: Option<FailureKey>,
        layer: usize,
    },
}

/// `Failure` in an orderable form for the event heap.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct FailureKey {
    status: Option<u16>,
    retry_after_ms: Option<u64>,
    should_retry: Option<bool>,
}

impl FailureKey {
    fn failure(&self) -> Failure {
        match self.status {
            None => Failure::Connection,
            Some(status) => Failure::Status {
                status,
                retry_after_ms: self.retry_after_ms,
                should_retry: self.should_retry,
            },
        }
    }
}

/// Plays `scenario` with `layers` (outermost first) as the client.
pub fn run(
    scenario: &Scenario,
    layers: &[RetryLayer],
    sink: &mut dyn AttemptSink,
) -> Result<VirtualRun, DriverError> {
    assert!(!layers.is_empty(), "an SDK client has at least one layer");
    // An SDK's constants are real seconds. A scenario written for a real client at a time
    // scale (`provider.time_scale`, for `--client`) runs the provider that much faster than
    // the client's clock; the simulated client keeps its constants in client time too, so
    // the two agree (a 130 s Retry-After at scale 10 is 13 s to the SDK).
    let scale = scenario.provider.time_scale.max(f64::MIN_POSITIVE);
    let dilate = |ms: u64| -> u64 {
        if ms == u64::MAX {
            ms
        } else {
            (ms as f64 * scale).round().min(u64::MAX as f64) as u64
        }
    };
    let layers: Vec<RetryLayer> = layers
        .iter()
        .map(|l| RetryLayer {
            base_ms: dilate(l.base_ms),
            cap_ms: dilate(l.cap_ms),
            retry_after_max_ms: l.retry_after_max_ms.map(dilate),
            timeout_ms: dilate(l.timeout_ms),
            router: l.router.clone().map(|r| router::RouterSpec {
                cooldown_ms: dilate(r.cooldown_ms),
                minute_ms: dilate(r.minute_ms).max(1),
                ..r
            }),
            jitter: match l.jitter {
                layer::LayerJitter::AddUpTo { max_ms } => layer::LayerJitter::AddUpTo {
                    max_ms: dilate(max_ms),
                },
                j => j,
            },
            ..l.clone()
        })
        .collect();
    let layers = &layers[..];
    let mut providers = ProviderSet::new(scenario, SCENARIO_EPOCH_UNIX_MS)?;
    let mut jitter: ChaCha8Rng = rng::stream(scenario.seed, "client");
    let workers = scenario.client.workers.unwrap_or(DEFAULT_WORKERS).max(1) as usize;
    let timeout = layers.last().map_or(600_000, |l| l.timeout_ms);
    let cap = scenario.duration_ms;
    let mut measure = Measurement::new(scenario.bucket_ms, cap);
    if providers.several() {
        measure.name_providers(providers.names());
    }
    measure.keep_cases(sink.wants_rows());
    let mut arrivals = Arrivals::new(scenario);
    let mut calls = Calls::default();
    // (time, order, call index, step): ties in scheduling order.
    let mut events: BinaryHeap<Reverse<(Millis, u64, usize, Step)>> = BinaryHeap::new();
    let mut order = 0u64;
    let mut handled = 0u64;
    // Each instance: each layer's budget, client-side rate limiter (on the client's own
    // clock) and router's deployment health, shared by all the instance's calls.
    let client_ms = |t: Millis| -> u64 { (t as f64 / scale).round() as u64 };
    let replicas = scenario.client.replicas.max(1) as usize;
    let mut instances: Vec<Instance> = (0..replicas)
        .map(|_| Instance {
            waiting: VecDeque::new(),
            busy: 0,
            budgets: layers
                .iter()
                .map(|l| {
                    l.budget.clone().map(|b| {
                        let state = BudgetState::new(&b);
                        (b, state)
                    })
                })
                .collect(),
            limiters: layers
                .iter()
                .map(|l| {
                    l.rate_limiter
                        .clone()
                        .map(|p| cubic::CubicLimiter::new(p, 0))
                })
                .collect(),
            routers: layers
                .iter()
                .map(|l| l.router.as_ref().map(|_| Router::default()))
                .collect(),
        })
        .collect();
    let innermost = layers.len() - 1;
    let abort = AbortWatch::new(scenario);
    let mut aborted = None;
    let mut now: Millis = 0;
    loop {
        if let Some(a) = abort.check(now, || [measure.running()]) {
            aborted = Some(a);
            break;
        }
        let next = stampede_core::earliest([
            events.peek().map(|Reverse((t, ..))| *t),
            arrivals.peek_time(),
        ]);
        let Some(t) = next else { break };
        if t > cap {
            now = cap;
            break;
        }
        now = t.max(now);
        while arrivals.peek_time().is_some_and(|a| a <= now) {
            if let Some(a) = arrivals.next() {
                measure.on_submit();
                measure.on_arrival(a.job.id, a.job.priority, &a.job.class);
                measure.on_tenant_arrival(a.job.id, &a.job.tenant, a.at);
                let r = replica_of(&a.job, replicas);
                instances[r].waiting.push_back(a);
                handled += 1;
            }
        }
        for (r, instance) in instances.iter_mut().enumerate() {
            order = start_waiting(
                r,
                instance,
                &mut calls,
                workers,
                &mut events,
                order,
                now,
                layers.len(),
            );
        }
        while let Some(Reverse((t, _, idx, step))) = events.peek().cloned() {
            if t > now {
                break;
            }
            events.pop();
            handled += 1;
            let Some(call) = calls.get_mut(idx) else {
                debug_assert!(false, "an event for call slot {idx}, which holds no call");
                continue;
            };
            let replica = call.replica;
            let Instance {
                budgets,
                limiters,
                routers,
                ..
            } = &mut instances[replica];
            match step {
                Step::Send => {
                    // A rate limiter holds the attempt in the client until it has a token.
                    let wait = limiters
                        .iter_mut()
                        .flatten()
                        .map(|l| l.acquire(client_ms(now)))
                        .find(|w| *w > 0);
                    if let Some(wait) = wait {
                        order += 1;
                        events.push(Reverse((now + dilate(wait), order, idx, Step::Send)));
                        continue;
                    }
                    // A router picks the attempt's deployment; with none healthy its
                    // attempt fails in the client.
                    if let Some(i) = pick_deployments(call, layers, routers, now, &mut jitter) {
                        order += 1;
                        let none = Step::Heard {
                            provider: 0,
                            seq: LOCAL,
                            ok: false,
                            failure: Some(FailureKey {
                                status: Some(router::NO_DEPLOYMENT_STATUS),
                                retry_after_ms: None,
                                should_retry: None,
                            }),
                            layer: i,
                        };
                        events.push(Reverse((now, order, idx, none)));
                        continue;
                    }
                    // Client-side throttling may refuse the attempt before it leaves.
                    let draw: f64 = rand::Rng::gen(&mut jitter);
                    let admitted = budgets
                        .iter_mut()
                        .flatten()
                        .all(|(b, st)| st.admit(b, now, draw));
                    if !admitted {
                        // Refused in the client: the call ends failed, nothing was sent.
                        order += 1;
                        let rejected = Step::Heard {
                            provider: 0,
                            seq: LOCAL,
                            ok: false,
                            failure: None,
                            layer: innermost,
                        };
                        events.push(Reverse((now, order, idx, rejected)));
                        continue;
                    }
                    if call.sent > 0 {
                        track(budgets, 0, 1);
                    }
                    let request = request_of(call, layers);
                    call.sent += 1;
                    if call.first_sent_at.is_none() {
                        // Its queue wait ends at its first send, not when a worker took it
                        // up: a client-side throttle or token wait came between (and a
                        // call it refused was never sent at all).
                        call.first_sent_at = Some(now);
                        measure.on_first_dispatch(call.arrival.job.id, call.arrival.at, now);
                    }
                    let pix = providers.of_request(&request);
                    let decision = providers.arrive(pix, &request, now);
                    let by = SentBy {
                        tenant: &call.arrival.job.tenant,
                        class: &call.arrival.job.class,
                        priority: crate::measure::queues::priority_name(call.arrival.job.priority),
                        provider: pix,
                        group: None,
                    };
                    let numbering = crate::sink::attempts::Numbering {
                        action: call.arrival.job.id,
                        attempt_no: call.sent,
                    };
                    providers
                        .drain_journal_with(pix, |entry| {
                            measure.on_journal(entry, None, &by);
                            crate::sink::attempts::write(sink, entry, None, by.tenant, numbering)
                        })
                        .map_err(DriverError::Output)?;
                    let (after, ok, failure) =
                        heard(&decision.answer, decision.latency_ms, timeout);
                    call.last_status = decision.answer.status();
                    order += 1;
                    events.push(Reverse((
                        now + after,
                        order,
                        idx,
                        Step::Heard {
                            provider: pix,
                            seq: decision.seq,
                            ok,
                            failure,
                            layer: innermost,
                        },
                    )));
                }
                Step::Heard {
                    provider: pix,
                    seq,
                    ok,
                    failure,
                    layer,
                } => {
                    if seq != LOCAL {
                        let throttled = failure
                            .as_ref()
                            .is_some_and(|f| matches!(f.status, Some(429 | 503)));
                        for l in limiters.iter_mut().flatten() {
                            l.on_answer(client_ms(now), throttled);
                        }
                        providers.depart(pix, seq, now);
                        if call.sent > 1 {
                            track(budgets, 0, -1);
                        }
                        let refused = failure
                            .as_ref()
                            .is_some_and(|f| matches!(f.status, Some(429 | 503 | 529)));
                        for (i, (b, st)) in budgets
                            .iter_mut()
                            .enumerate()
                            .filter_map(|(i, b)| Some((i, b.as_mut()?)))
                        {
                            st.on_answer(b, ok, refused, call.taken[i], now);
                        }
                    }
                    if ok {
                        for (i, r) in routers.iter_mut().enumerate() {
                            if let (Some(r), Some(spec), Some(d)) =
                                (r, &layers[i].router, call.route[i].picked.take())
                            {
                                r.on_success(spec, &d, now);
                            }
                        }
                    }
                    let retry = match (&failure, ok) {
                        (Some(f), false) => decide(
                            call,
                            layers,
                            budgets,
                            routers,
                            &f.failure(),
                            layer,
                            now,
                            &mut jitter,
                        ),
                        _ => None,
                    };
                    match retry {
                        Some(delay) => {
                            order += 1;
                            events.push(Reverse((now + delay, order, idx, Step::Send)));
                        }
                        None => {
                            let done = calls.end(idx);
                            if let Some(call) = done {
                                let route = route_name(&call.arrival.job, layers);
                                end(&mut measure, &call, now, ok, route);
                            }
                            track(budgets, -1, 0);
                            let instance = &mut instances[replica];
                            instance.busy -= 1;
                            order = start_waiting(
                                replica,
                                instance,
                                &mut calls,
                                workers,
                                &mut events,
                                order,
                                now,
                                layers.len(),
                            );
                        }
                    }
                }
            }
        }
    }
    // Calls still open, and arrivals waiting for a worker, did not finish in time.
    for call in calls.open() {
        let sent = call.sent > 0;
        let route = route_name(&call.arrival.job, layers);
        open(&mut measure, now, &call.arrival, sent, route);
    }
    for arrival in instances.iter().flat_map(|i| &i.waiting) {
        let route = route_name(&arrival.job, layers);
        open(&mut measure, now, arrival, false, route);
    }
    let mut measured = measure.finish(now);
    measured.summary.aborted = aborted;
    Ok(VirtualRun {
        measured,
        events: handled,
        refused_offers: 0,
        end_ms: now,
    })
}

/// The attempt a call puts on the wire: what an SDK sends (no key, no attribution).
fn request_of(call: &Call, layers: &[RetryLayer]) -> Request {
    let job = &call.arrival.job;
    let route = wire_route(job, layers);
    let chat = job.route == Route::ChatCompletion;
    // A router sends with its deployment's credential (the innermost router's pick).
    let credential = call
        .route
        .iter()
        .rev()
        .find_map(|r| r.picked.clone())
        .map_or_else(|| job.credential.shared(), Arc::from);
    let credential_is_jobs = *credential == *job.credential;
    Request {
        route,
        credential: Some(credential),
        body_hash: job.payload_hash,
        external_ref: job.external_ref.clone(),
        prompt_tokens: if chat { job.prompt_tokens } else { 0 },
        max_tokens: if chat { job.max_output_tokens } else { 0 },
        stream: chat && job.stream,
        stream_usage: chat && job.stream,
        // A deployment of another provider asks for that provider's default model.
        model: job.model.filter(|_| credential_is_jobs).map(Name::shared),
        sdk_retry_count: call
            .attempts
            .get(layers.len().saturating_sub(1))
            .map(|a| a.saturating_sub(1)),
        ..Request::default()
    }
}

/// When the client hears how an attempt ended (ms after it was sent), whether it got its
/// answer, and the failure its layers see otherwise.
fn heard(answer: &Answer, latency: u64, timeout: u64) -> (u64, bool, Option<FailureKey>) {
    match answer {
        Answer::Respond { status, .. } if (200..300).contains(status) && latency <= timeout => {
            (latency, true, None)
        }
        Answer::Respond { status, .. } if latency <= timeout => {
            // `retry-after-ms` (always sent with `retry-after`) and `x-should-retry`, as
            // numbers: what the SDKs read from those headers.
            let ms = answer.retry_after_ms();
            let should_retry = answer.signals().and_then(|s| s.should_retry);
            (
                latency,
                false,
                Some(FailureKey {
                    status: Some(*status),
                    retry_after_ms: ms,
                    should_retry,
                }),
            )
        }
        Answer::Hang { .. } | Answer::Respond { .. } => (timeout, false, Some(connection())),
        Answer::Drop { .. } | Answer::StreamCut { .. } | Answer::StreamError { .. } => {
            (latency.min(timeout), false, Some(connection()))
        }
    }
}

fn connection() -> FailureKey {
    FailureKey {
        status: None,
        retry_after_ms: None,
        should_retry: None,
    }
}

/// The layers' verdict on a failure, innermost (`upto`) first: the delay before the next
/// attempt, or `None` when every layer gave up. An outer layer that retries starts its
/// inner layers' sequences afresh.
#[allow(clippy::too_many_arguments)]
fn decide(
    call: &mut Call,
    layers: &[RetryLayer],
    budgets: &mut [Option<(RetryBudget, BudgetState)>],
    routers: &mut [Option<Router>],
    failure: &Failure,
    upto: usize,
    now: Millis,
    rng: &mut ChaCha8Rng,
) -> Option<u64> {
    for i in (0..=upto.min(layers.len() - 1)).rev() {
        if let (Some(router), Some(spec)) = (routers[i].as_mut(), layers[i].router.as_ref()) {
            let own = call.arrival.job.credential;
            let group = call.route[i].group;
            if let Some(d) = call.route[i].picked.clone() {
                let size = Router::members(spec, group, &own).len();
                router.on_failure(spec, &d, size, failure, now);
            }
            let attempts = call.attempts[i];
            let verdict = router.decide(
                spec,
                &layers[i],
                &mut call.route[i],
                failure,
                attempts,
                &own,
                now,
                rng,
            );
            let delay = match verdict {
                Verdict::Retry(d) => {
                    call.attempts[i] += 1;
                    d
                }
                Verdict::Fallback(d) => {
                    call.attempts[i] = 1;
                    d
                }
                Verdict::GiveUp => continue,
            };
            restart_inner(call, i);
            return Some(delay);
        }
        let Some(delay) = layers[i].retry_after(failure, call.attempts[i], rng) else {
            continue;
        };
        // A budgeted layer retries only while its budget allows (it takes the cost).
        let taken = match budgets.get_mut(i).and_then(Option::as_mut) {
            Some((b, st)) => st.take_retry(b, failure),
            None => Some(0),
        };
        if let Some(taken) = taken {
            call.taken[i] = taken;
            call.attempts[i] += 1;
            restart_inner(call, i);
            return Some(delay);
        }
    }
    None
}

/// Layer `i` runs another attempt: the layers under it start their sequences afresh.
fn restart_inner(call: &mut Call, i: usize) {
    for inner in call.attempts.iter_mut().skip(i + 1) {
        *inner = 1;
    }
    for inner in call.route.iter_mut().skip(i + 1) {
        *inner = RouterCall::default();
    }
}

/// Picks a deployment for every router layer of `call` whose attempt has none yet,
/// outermost first. Returns the layer whose router found no healthy deployment, if one did.
fn pick_deployments(
    call: &mut Call,
    layers: &[RetryLayer],
    routers: &[Option<Router>],
    now: Millis,
    rng: &mut ChaCha8Rng,
) -> Option<usize> {
    for (i, layer) in layers.iter().enumerate() {
        let (Some(router), Some(spec)) = (routers[i].as_ref(), layer.router.as_ref()) else {
            continue;
        };
        if call.route[i].picked.is_some() {
            continue;
        }
        let own = call.arrival.job.credential;
        if router
            .pick(spec, &mut call.route[i], &own, now, rng)
            .is_none()
        {
            return Some(i);
        }
    }
    None
}

/// Calls and retries in flight, for budgets that count them.
fn track(budgets: &mut [Option<(RetryBudget, BudgetState)>], calls: i32, retries: i32) {
    for (_, st) in budgets.iter_mut().flatten() {
        st.track(calls, retries);
    }
}

/// Gives free workers the calls waiting for one; returns the event order counter.
#[allow(clippy::too_many_arguments)]
fn start_waiting(
    replica: usize,
    instance: &mut Instance,
    calls: &mut Calls,
    workers: usize,
    events: &mut BinaryHeap<Reverse<(Millis, u64, usize, Step)>>,
    mut order: u64,
    now: Millis,
    layers: usize,
) -> u64 {
    while instance.busy < workers {
        let Some(arrival) = instance.waiting.pop_front() else {
            break;
        };
        instance.busy += 1;
        track(&mut instance.budgets, 1, 0);
        let slot = calls.start(Call {
            started: 0,
            replica,
            arrival,
            attempts: vec![1; layers],
            route: vec![RouterCall::default(); layers],
            taken: vec![0; layers],
            sent: 0,
            first_sent_at: None,
            last_status: None,
        });
        order += 1;
        events.push(Reverse((now, order, slot, Step::Send)));
    }
    order
}

/// The route an SDK sends `job` on: the anthropic SDK calls Messages, the others OpenAI's
/// chat completions.
fn wire_route(job: &stampede_core::Job, layers: &[RetryLayer]) -> RequestRoute {
    let anthropic = layers.last().is_some_and(|l| l.name == "anthropic-python");
    match job.route {
        Route::ChatCompletion if anthropic => RequestRoute::Messages,
        Route::ChatCompletion => RequestRoute::ChatCompletions,
        Route::CreateRecord => RequestRoute::CreateRecord,
        Route::GetItem => RequestRoute::GetItem {
            id: job.resource.clone().unwrap_or_default(),
        },
    }
}

/// `job`'s route as the outcome tables name it (see [`wire_route`]).
fn route_name(job: &stampede_core::Job, layers: &[RetryLayer]) -> &'static str {
    request_route(&wire_route(job, layers))
}

fn end(measure: &mut Measurement, call: &Call, now: Millis, ok: bool, route: &str) {
    let seen = Unseen {
        attempts: call.sent,
        last_status: call.last_status,
        first_sent_at: call.first_sent_at,
    };
    end_unseen(measure, &call.arrival, seen, (now, ok), route);
}

/// What a driver that reads no client's notes knows of a call when it ends.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Unseen {
    /// Attempts it made.
    pub attempts: u32,
    /// The last status heard, if any.
    pub last_status: Option<u16>,
    /// When its first attempt left (ms).
    pub first_sent_at: Option<Millis>,
}

/// Ends `arrival` at `now` (ms): completed when `ok`, else failed, its attempts spent (the
/// harness hears no reason), with a dead letter without a timeline and the next actions
/// that are safe knowing only whether it was sent.
pub(crate) fn end_unseen(
    measure: &mut Measurement,
    arrival: &Arrival,
    seen: Unseen,
    (now, ok): (Millis, bool),
    route: &str,
) {
    let sent = seen.attempts > 0;
    let terminal = Terminal {
        job: arrival.job.id,
        status: if ok {
            TerminalStatus::Completed
        } else {
            TerminalStatus::Failed
        },
        reason: match (ok, seen.last_status) {
            (true, _) => Reason::Succeeded,
            // The client gave up on an answer no retry changes (a body the API refuses, a
            // key it does not know): that, not a spent budget, is why it failed.
            (false, Some(status @ (400 | 401 | 403 | 404 | 413 | 422))) => {
                Reason::WontImprove { status, code: None }
            }
            (false, _) => Reason::AttemptsExhausted,
        },
        sent,
        last_status: seen.last_status,
        attempts: seen.attempts,
        waited_ms: 0,
        operation_id: None,
        next_actions: if ok {
            stampede_core::NextActions::new()
        } else {
            crate::driver_common::persisted::unseen_next_actions(TerminalStatus::Failed, sent)
        },
    };
    measure.on_terminal(Ended {
        at: now,
        tenant: &arrival.job.tenant,
        class: &arrival.job.class,
        route,
        terminal: &terminal,
        submitted_at: arrival.at,
        first_sent_at: seen.first_sent_at,
        deadline: arrival.job.deadline,
        group: None,
    });
    // No notes the harness can read: a dead letter without a timeline.
    measure.on_unseen_case(&terminal, &arrival.job, (arrival.at, now));
}

/// Measures `arrival` as still open when the run stopped at `now` (ms): unfinished, sent
/// or not, and listed in unfinished.csv.
pub(crate) fn open(
    measure: &mut Measurement,
    now: Millis,
    arrival: &Arrival,
    sent: bool,
    route: &str,
) {
    let job = &arrival.job;
    let group = Group {
        tenant: &job.tenant,
        class: &job.class,
        route,
    };
    measure.on_unfinished(now, (job.id, group), arrival.at, job.deadline, sent);
    measure.list_unfinished(
        job.id,
        UnfinishedRow {
            tenant: arrival.job.tenant.to_string(),
            class: arrival.job.class.to_string(),
            submitted_at_ms: arrival.at,
            sent,
            state: if sent { "in_flight" } else { "never_sent" }.into(),
            idempotency_key: String::new(),
            external_ref: arrival.job.external_ref.clone().unwrap_or_default(),
            ..UnfinishedRow::default()
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_reports::AttemptRow;

    /// Keeps every attempt the provider journaled.
    #[derive(Default)]
    struct Rows(Vec<AttemptRow<'static>>);

    impl AttemptSink for Rows {
        fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
            self.0.push(row.clone().into_owned());
            Ok(())
        }
    }

    fn play(text: &str) -> (VirtualRun, Vec<AttemptRow<'static>>) {
        let s = crate::scenario::parse(text, "t.toml", &[]).unwrap();
        let mut rows = Rows::default();
        let run = run(&s, &s.sdk_layers, &mut rows).unwrap();
        (run, rows.0)
    }

    fn persistent_429(preset: &str) -> String {
        format!(
            r#"
name = "throttled"
seed = 5
duration = "2m"

[provider]
latency = {{ fixed = "100ms" }}

[[provider.scopes]]
id = "a"

[[provider.credentials]]
key = "sk-a"
scope = "a"

[[provider.faults]]
status = 429
retry_after = "1s"

[[workload]]
tenant = "t"
credential = "sk-a"
class = "llm"
count = 300
arrival = {{ rate = "5/s" }}

[client]
preset = "{preset}"
workers = 8
"#
        )
    }

    #[test]
    fn aws_adaptive_sends_fewer_attempts_than_aws_standard_under_a_persistent_429() {
        let (standard, rows_std) = play(&persistent_429("aws-standard"));
        let (adaptive, rows_ad) = play(&persistent_429("aws-adaptive"));
        let (s, a) = (standard.measured.summary, adaptive.measured.summary);
        assert_eq!(s.outbound_attempts, rows_std.len() as u64);
        assert_eq!(a.outbound_attempts, rows_ad.len() as u64);
        // Standard: every call's first attempt, and retries until the quota's 100 are gone.
        assert_eq!(s.outbound_attempts, 400, "{s:?}");
        // Adaptive: once throttled, attempts leave at the bucket's rate (0.5/s at the
        // floor), whatever the arrivals.
        assert!(
            a.outbound_attempts * 2 < s.outbound_attempts,
            "adaptive {} vs standard {}",
            a.outbound_attempts,
            s.outbound_attempts
        );
        // After the first few seconds the provider sees at most about one attempt a second.
        let late = rows_ad.iter().filter(|r| r.at_ms >= 10_000).count() as u64;
        assert!(late <= 110 + 5, "{late} attempts in the last 110 s");
        // Deterministic: the same seed plays the same attempts.
        let (_, again) = play(&persistent_429("aws-adaptive"));
        let times = |rows: &[AttemptRow<'static>]| rows.iter().map(|r| r.at_ms).collect::<Vec<_>>();
        assert_eq!(times(&again), times(&rows_ad));
    }

    fn two_deployments(fallbacks: &str) -> String {
        format!(
            r#"
name = "router"
seed = 9
duration = "2m"

[provider]
latency = {{ fixed = "200ms" }}

[[provider.scopes]]
id = "a"

[[provider.scopes]]
id = "b"

[[provider.scopes]]
id = "c"

[[provider.credentials]]
key = "sk-a"
scope = "a"

[[provider.credentials]]
key = "sk-b"
scope = "b"

[[provider.credentials]]
key = "sk-c"
scope = "c"

# The first deployment refuses everything.
[[provider.faults]]
status = 429
retry_after = "2s"
credential = "sk-a"

[[workload]]
tenant = "t"
credential = "sk-a"
class = "llm"
count = 60
arrival = {{ rate = "2/s" }}

[client]
preset = "litellm-router"
workers = 8
deployments = ["sk-a", "sk-b"]
{fallbacks}
"#
        )
    }

    #[test]
    fn litellm_router_moves_traffic_off_a_refusing_deployment() {
        let (run, rows) = play(&two_deployments(""));
        let s = run.measured.summary;
        let on = |scope: &str| rows.iter().filter(|r| r.scope == scope).count();
        assert!(on("a") > 0, "the refusing deployment was tried");
        assert!(on("b") > 0, "traffic moved to the other");
        assert!(
            rows.iter()
                .filter(|r| r.scope == "a")
                .all(|r| r.outcome == "429"),
            "sk-a only refuses"
        );
        // A refused attempt cools sk-a down for its Retry-After and the retry goes at once
        // to sk-b: every call completes, on sk-b.
        assert_eq!(s.completed, 60, "{s:?}");
        assert_eq!(on("b"), 60);
        // Cooling down keeps most attempts off sk-a: it sees at most one refusal per
        // 2 s cooldown, and a few in flight together.
        assert!(on("a") < 40, "{} attempts on sk-a", on("a"));
        // The same seed, the same picks.
        let (_, again) = play(&two_deployments(""));
        let scopes =
            |rows: &[AttemptRow<'static>]| rows.iter().map(|r| r.scope.clone()).collect::<Vec<_>>();
        assert_eq!(scopes(&again), scopes(&rows));
    }

    #[test]
    fn litellm_router_with_every_deployment_refusing_falls_back() {
        // Both deployments refuse: the calls' retries are spent (some in the client, with
        // nothing healthy), then the fallback group takes them.
        let text = two_deployments("fallbacks = [\"sk-c\"]").replace(
            "credential = \"sk-a\"\n\n[[workload]]",
            "credential = \"sk-a\"\n\n[[provider.faults]]\nstatus = 429\nretry_after = \"2s\"\n\
             credential = \"sk-b\"\n\n[[workload]]",
        );
        let (run, rows) = play(&text);
        let s = run.measured.summary;
        let on = |scope: &str| rows.iter().filter(|r| r.scope == scope).count();
        assert!(on("a") > 0 && on("b") > 0 && on("c") > 0, "{rows:?}");
        assert_eq!(s.completed, 60, "{s:?}");
        assert_eq!(on("c"), 60, "every call completes on the fallback");
    }
}
