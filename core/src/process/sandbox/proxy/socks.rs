//! SOCKS5 (RFC 1928), CONNECT only, without authentication: what
//! `ALL_PROXY=socks5h://…` makes curl, git and many libraries speak. A
//! name (`socks5h`) is checked as a name, an address as an address.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, TcpStream};

use super::Shared;
use super::{Host, Refusal};

/// The first byte of every SOCKS5 greeting.
pub(super) const VERSION: u8 = 5;

const NO_AUTH: u8 = 0;
const NO_METHOD: u8 = 0xff;
const CONNECT: u8 = 1;
/// Replies: succeeded, not allowed by ruleset, host unreachable, command
/// not supported, address type not supported.
const OK: u8 = 0;
const NOT_ALLOWED: u8 = 2;
const UNREACHABLE: u8 = 4;
const BAD_COMMAND: u8 = 7;
const BAD_ADDRESS: u8 = 8;

pub(super) fn serve(mut client: TcpStream, shared: &Shared, id: u64) -> io::Result<()> {
    let [_, count] = read_array::<2>(&mut client)?;
    let mut methods = vec![0; usize::from(count)];
    client.read_exact(&mut methods)?;
    if !methods.contains(&NO_AUTH) {
        return client.write_all(&[VERSION, NO_METHOD]);
    }
    client.write_all(&[VERSION, NO_AUTH])?;

    let [version, command, _, kind] = read_array::<4>(&mut client)?;
    let host = match kind {
        1 => Some(Host::Ip(IpAddr::V4(Ipv4Addr::from(read_array::<4>(
            &mut client,
        )?)))),
        4 => Some(Host::Ip(IpAddr::V6(Ipv6Addr::from(read_array::<16>(
            &mut client,
        )?)))),
        3 => {
            let [len] = read_array::<1>(&mut client)?;
            let mut name = vec![0; usize::from(len)];
            client.read_exact(&mut name)?;
            std::str::from_utf8(&name).ok().and_then(Host::parse)
        }
        _ => return reply(&mut client, BAD_ADDRESS),
    };
    let port = u16::from_be_bytes(read_array::<2>(&mut client)?);
    if version != VERSION || command != CONNECT {
        return reply(&mut client, BAD_COMMAND);
    }
    let Some(host) = host else {
        return reply(&mut client, BAD_ADDRESS);
    };
    match shared.open(id, &host, port) {
        Ok(upstream) => {
            reply(&mut client, OK)?;
            super::relay::relay(client, upstream, &[])
        }
        Err(Refusal::Unreachable(_)) => reply(&mut client, UNREACHABLE),
        Err(Refusal::NotAllowed | Refusal::Private(_)) => reply(&mut client, NOT_ALLOWED),
    }
}

/// A reply with an unspecified bound address (clients do not use it).
fn reply(client: &mut TcpStream, code: u8) -> io::Result<()> {
    client.write_all(&[VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0])
}

fn read_array<const N: usize>(client: &mut TcpStream) -> io::Result<[u8; N]> {
    let mut bytes = [0; N];
    client.read_exact(&mut bytes)?;
    Ok(bytes)
}
