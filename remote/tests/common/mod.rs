//! What conch-remote's tests share: a server listening in this process.

use std::net::SocketAddr;
use std::sync::mpsc;

use conch_remote::server::listen::serve_listener;
use conch_remote::{ServeOptions, Server, Token};

/// Starts a server on 127.0.0.1 in this process (it serves until the test
/// binary ends), asking `token` of its clients when there is one; returns
/// its address.
pub fn listen(token: Option<Token>) -> SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let server = Server::new(ServeOptions::default());
            let _ = serve_listener(server, listener, token, None).await;
        });
    });
    rx.recv().unwrap()
}
