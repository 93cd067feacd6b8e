//! Which addresses a fetch may reach: not the machine itself or its networks. Loopback,
//! private, link-local, carrier-grade NAT, unique-local, multicast, broadcast, documentation
//! and unspecified addresses are refused — checked on the addresses a host resolves to, the
//! connection then pinned to a checked address, so a name cannot resolve to a public
//! address for the check and to a private one for the connection. Hosts the user allows
//! (`web.allowed_hosts`) are not checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether `ip` is on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(mapped) => is_public_v4(mapped),
            None => is_public_v6(ip),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_unspecified()
        || ip.is_documentation()
        || a == 0
        // Carrier-grade NAT, 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // Benchmarking, 198.18.0.0/15, and the reserved 240.0.0.0/4.
        || (a == 198 && (b == 18 || b == 19))
        // IETF protocol assignments, 192.0.0.0/24.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local fc00::/7, link-local fe80::/10, site-local fec0::/10.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // Documentation 2001:db8::/32.
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // IPv4-compatible forms, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach IPv4
        // addresses too.
        || ip.to_ipv4().is_some_and(|v4| !is_public_v4(v4))
        || embedded_v4(ip).is_some_and(|v4| !is_public_v4(v4)))
}

/// The IPv4 address inside a NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let join = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return Some(join(s[6], s[7]));
    }
    (s[0] == 0x2002).then(|| join(s[1], s[2]))
}

/// Whether `host` (a name or an address, as in a URL) is one the user allows, ignoring
/// case and the brackets of an IPv6 address.
pub fn is_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    allowed.iter().any(|entry| {
        entry
            .trim_start_matches('[')
            .trim_end_matches(']')
            .eq_ignore_ascii_case(host)
    })
}

/// The first of `addresses` a fetch may connect to, or why none: the addresses refused.
pub fn choose(host: &str, addresses: &[SocketAddr]) -> Result<SocketAddr, String> {
    if addresses.is_empty() {
        return Err(format!("`{host}` did not resolve to any address"));
    }
    // Every address must be public: one private address among them could be the one a
    // later lookup (a browser's, a retry's) picks.
    let refused: Vec<String> = addresses
        .iter()
        .filter(|address| !is_public(address.ip()))
        .map(|address| address.ip().to_string())
        .collect();
    if !refused.is_empty() {
        return Err(format!(
            "`{host}` resolves to {}, which is on this machine or a private network; add \
             the host to `web.allowed_hosts` in your personal configuration to reach it",
            refused.join(", ")
        ));
    }
    Ok(addresses[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().expect("an address"))
    }

    #[test]
    fn the_local_network_is_not_public() {
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "ff02::1",
            "2001:db8::1",
            "192.0.2.1",
            "192.0.0.8",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
        ] {
            assert!(!public(address), "{address}");
        }
        for address in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(public(address), "{address}");
        }
    }

    #[test]
    fn allowed_hosts_match_ignoring_case_and_brackets() {
        let allowed = vec!["LocalHost".to_string(), "::1".to_string()];
        assert!(is_allowed("localhost", &allowed));
        assert!(is_allowed("[::1]", &allowed));
        assert!(!is_allowed("127.0.0.1", &allowed));
    }

    #[test]
    fn one_private_address_refuses_the_host() {
        let addresses: Vec<SocketAddr> = vec![
            "93.184.216.34:443".parse().unwrap(),
            "10.0.0.1:443".parse().unwrap(),
        ];
        let error = choose("mixed.example", &addresses).expect_err("refused");
        assert!(
            error.contains("10.0.0.1") && error.contains("web.allowed_hosts"),
            "{error}"
        );
        assert!(choose("none.example", &[]).is_err());
    }
}
