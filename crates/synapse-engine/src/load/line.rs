//! One control line at a time over a TCP connection, never more: a line is
//! read a byte at a time, so the bulk bytes that may follow it on a
//! stream stay in the socket for the stream's own loop. Lines are few (a
//! handful a second), so the cost is nothing.

use super::wire::MAX_LINE;
use std::io::{self, Read, Write};
use std::net::TcpStream;

/// Writes `line` and its newline.
pub fn send(stream: &mut TcpStream, line: &str) -> io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    stream.write_all(&buf)
}

/// Reads one line (without its newline). A peer that closes first is
/// `UnexpectedEof`; one that sends more than [`MAX_LINE`] without a
/// newline, or something that is not text, is `InvalidData`. A read
/// timeout set on the stream applies to each byte's wait.
pub fn receive(stream: &mut TcpStream) -> io::Result<String> {
    let mut line = Vec::with_capacity(64);
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the connection was closed",
                ));
            }
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => {
                line.push(byte[0]);
                if line.len() > MAX_LINE {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a line longer than the protocol allows",
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A timeout mid-line waits on for the rest; before a line's
            // first byte it is the caller's to see (its stop flag).
            Err(e) if waited(&e) && !line.is_empty() => {}
            Err(e) => return Err(e),
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a line that is not text"))
}

/// Whether `e` is a read timeout (`SO_RCVTIMEO`).
pub fn waited(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_line_is_read_and_what_follows_stays() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(b"HELLO there\r\nbulk").unwrap();
        assert_eq!(receive(&mut s).unwrap(), "HELLO there");
        let mut rest = [0u8; 4];
        s.read_exact(&mut rest).unwrap();
        assert_eq!(&rest, b"bulk");
        send(&mut s, "GO").unwrap();
        assert_eq!(receive(&mut c).unwrap(), "GO");
        c.write_all(&[b'x'; MAX_LINE + 2]).unwrap();
        assert_eq!(
            receive(&mut s).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        drop(c);
        drop(l);
    }

    #[test]
    fn a_peer_that_closes_is_an_end_of_file() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        drop(c);
        assert_eq!(
            receive(&mut s).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}
