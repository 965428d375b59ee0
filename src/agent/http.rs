//! `/metrics` over HTTP: hyper on a one-thread runtime of its own, away
//! from the measurement thread. Content negotiation: the Prometheus
//! protobuf form (which carries native histograms) when the scraper
//! prefers it, OpenMetrics text otherwise.

use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

/// The protobuf exposition, length-delimited `MetricFamily` messages.
pub const PROTOBUF: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";
/// OpenMetrics text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which form a scrape gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Protobuf, native histograms included.
    Protobuf,
    /// OpenMetrics text, classic buckets.
    Text,
}

/// Reads an `Accept` header: protobuf when it is the client's strict
/// favourite among the forms served (its `q` above any text form's).
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut proto, mut text) = (-1.0_f64, -1.0_f64);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: Vec<(String, String)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| {
                (
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_string(),
                )
            })
            .collect();
        let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let q = param("q")
            .and_then(|q| q.parse::<f64>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/vnd.google.protobuf"
                if param("proto") == Some("io.prometheus.client.MetricFamily")
                    && param("encoding").is_none_or(|e| e == "delimited") =>
            {
                proto = proto.max(q);
            }
            "application/openmetrics-text" | "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if proto > 0.0 && proto > text {
        Format::Protobuf
    } else {
        Format::Text
    }
}

/// What `/metrics` serves: the registry, and the last text body's size.
#[derive(Debug)]
struct Exposition {
    registry: Arc<Registry>,
    /// A thousand peers make megabytes of text: sized from the last
    /// scrape, the buffer is allocated once instead of grown and copied
    /// a dozen times (measured for issue 12: `git log -p BENCHMARKS.md`).
    text_len: AtomicUsize,
}

/// The body and its content type for one scrape. `text_len` is the last
/// text body's size, kept for the next.
fn render(
    registry: &Registry,
    format: Format,
    text_len: &AtomicUsize,
) -> Result<(Vec<u8>, &'static str), String> {
    match format {
        Format::Protobuf => {
            prometheus_client::encoding::prometheus_protobuf::encode_to_vec(registry)
                .map(|b| (b, PROTOBUF))
                .map_err(|e| format!("{e:?}"))
        }
        Format::Text => {
            // A little room for the peers' counters to grow a digit.
            let hint = text_len.load(Ordering::Relaxed);
            let mut s = String::with_capacity((hint + hint / 16).max(64 * 1024));
            prometheus_client::encoding::text::encode(&mut s, registry)
                .map_err(|e| e.to_string())?;
            text_len.store(s.len(), Ordering::Relaxed);
            Ok((s.into_bytes(), OPENMETRICS))
        }
    }
}

/// The running server.
#[derive(Debug)]
pub struct MetricsServer {
    /// Where it listens (the real port when 0 was asked for).
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `listen` (so a taken port fails here) and serves `registry`.
pub fn serve(registry: Arc<Registry>, listen: SocketAddr) -> std::io::Result<MetricsServer> {
    let std_listener = std::net::TcpListener::bind(listen)?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("synapse-metrics".into())
        .spawn(move || {
            let exposition = Arc::new(Exposition {
                registry,
                text_len: AtomicUsize::new(0),
            });
            runtime.block_on(accept_loop(std_listener, exposition, rx));
        })?;
    Ok(MetricsServer {
        addr,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

async fn accept_loop(
    std_listener: std::net::TcpListener,
    exposition: Arc<Exposition>,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
        return;
    };
    loop {
        let conn = tokio::select! {
            _ = &mut shutdown => return,
            c = listener.accept() => c,
        };
        let Ok((stream, _)) = conn else { continue };
        let exposition = Arc::clone(&exposition);
        let service = hyper::service::service_fn(move |req| {
            let exposition = Arc::clone(&exposition);
            async move { Ok::<_, std::convert::Infallible>(respond(&exposition, &req)) }
        });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

type Body = http_body_util::Full<hyper::body::Bytes>;

fn respond<B>(exposition: &Exposition, req: &hyper::Request<B>) -> hyper::Response<Body> {
    let reply = |status: u16, ctype: &str, body: Vec<u8>| {
        hyper::Response::builder()
            .status(status)
            .header("content-type", ctype)
            .body(Body::new(body.into()))
            .unwrap_or_default()
    };
    if req.uri().path() != "/metrics" {
        return reply(404, "text/plain", b"synapse agent: see /metrics\n".to_vec());
    }
    if req.method() != hyper::Method::GET && req.method() != hyper::Method::HEAD {
        return reply(405, "text/plain", b"GET only\n".to_vec());
    }
    let accept = req
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    match render(
        &exposition.registry,
        negotiate(accept),
        &exposition.text_len,
    ) {
        Ok((body, ctype)) => reply(200, ctype, body),
        Err(e) => reply(
            500,
            "text/plain",
            format!("cannot encode: {e}\n").into_bytes(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_with_native_histograms_gets_protobuf() {
        // What Prometheus 2.42 sends with --enable-feature=native-histograms.
        let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(negotiate(Some(native)), Format::Protobuf);
    }

    #[test]
    fn text_when_text_is_preferred_or_nothing_is_said() {
        // Prometheus 2.42 without the feature.
        let classic = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(classic)), Format::Text);
        assert_eq!(negotiate(None), Format::Text);
        assert_eq!(negotiate(Some("*/*")), Format::Text);
        // A tie goes to text, which every scraper reads.
        let tie =
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily,text/plain";
        assert_eq!(negotiate(Some(tie)), Format::Text);
    }

    #[test]
    fn protobuf_of_another_message_or_encoding_is_not_served() {
        let other = "application/vnd.google.protobuf;proto=some.Other;encoding=delimited";
        assert_eq!(negotiate(Some(other)), Format::Text);
        let text_enc =
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text";
        assert_eq!(negotiate(Some(text_enc)), Format::Text);
        let zero = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;q=0";
        assert_eq!(negotiate(Some(zero)), Format::Text);
    }
}
