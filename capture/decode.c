/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* decode.c - link layer, IP, UDP and BFD decoding of one frame (see decode.h). */
#include "decode.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#define M_NAME(name, json, invalid, text)    json,
#define M_INVALID(name, json, invalid, text) invalid,
static const char *const malformed_names[] = {BFDCAP_MALFORMED(M_NAME)};
static const unsigned char malformed_invalid[] = {BFDCAP_MALFORMED(M_INVALID)};

const char *decode_malformed_name(int reason)
{
	if (reason < 0 || reason >= BFDCAP_M__COUNT)
		return "?";
	return malformed_names[reason];
}

int decode_malformed_is_invalid(int reason)
{
	if (reason < 0 || reason >= BFDCAP_M__COUNT)
		return 0;
	return malformed_invalid[reason];
}

#define CSUM_NAME(name, json) json,
static const char *const checksum_names[] = {BFDCAP_CHECKSUMS(CSUM_NAME)};

const char *decode_checksum_name(int verdict)
{
	if (verdict < 0 || verdict >= BFDCAP_CSUM__COUNT)
		return "?";
	return checksum_names[verdict];
}

int decode_checksum_failed(int verdict)
{
	return verdict == BFDCAP_CSUM_BAD_IP || verdict == BFDCAP_CSUM_BAD_UDP ||
	       verdict == BFDCAP_CSUM_ZERO_UDP_IPV6;
}

const char *decode_state_name(unsigned state)
{
	static const char *const names[] = {"AdminDown", "Down", "Init", "Up"};
	return state < 4 ? names[state] : "?";
}

char *decode_addr_str(int family, const uint8_t *addr, char *out, size_t outlen)
{
	if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, addr, out, (socklen_t)outlen))
		snprintf(out, outlen, "?");
	return out;
}

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One's-complement sum of @n bytes as big-endian 16-bit words (an odd byte padded, RFC 768). */
static uint32_t sum16(const uint8_t *p, size_t n, uint32_t sum)
{
	for (; n >= 2; p += 2, n -= 2)
		sum += rd16(p);
	if (n)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t fold16(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The UDP checksum of the whole datagram at @udp (@ulen bytes, all captured) under @pkt's
 * addresses: ok, none (IPv4, field 0), zero over IPv6, or bad. */
static int udp_checksum(const uint8_t *udp, size_t ulen, const struct bfdcap_pkt *pkt)
{
	size_t alen = pkt->family == 6 ? 16 : 4;
	uint32_t sum;

	if (!rd16(udp + 6))
		return pkt->family == 6 ? BFDCAP_CSUM_ZERO_UDP_IPV6 : BFDCAP_CSUM_NONE;
	sum = sum16(pkt->src, alen, 0);
	sum = sum16(pkt->dst, alen, sum);
	sum += IPPROTO_UDP + (uint32_t)(ulen & 0xffff) + (uint32_t)(ulen >> 16);
	sum = sum16(udp, ulen, sum);
	return fold16(sum) == 0xffff ? BFDCAP_CSUM_OK : BFDCAP_CSUM_BAD_UDP;
}

static int malformed(struct bfdcap_pkt *pkt, int reason)
{
	pkt->malformed = reason;
	return decode_malformed_is_invalid(reason) ? DECODE_INVALID : DECODE_MALFORMED;
}

/*
 * Authentication section (RFC 5880 4.2-4.4): type, length, key id, then for the MD5 and SHA1
 * types a reserved byte and a 32-bit sequence number. The section must fit in Length.
 */
static int decode_auth(const uint8_t *buf, size_t avail, struct bfdcap_pkt *pkt)
{
	size_t off = BFD_CTRL_LEN;
	unsigned type, len, want_min, want_max;

	if (pkt->length < off + 2)
		return malformed(pkt, BFDCAP_M_BAD_LENGTH);
	if (avail < off + 3)
		return malformed(pkt, BFDCAP_M_TRUNCATED);
	type = buf[off];
	len = buf[off + 1];
	switch (type) {
	case BFDCAP_AUTH_SIMPLE:
		want_min = 4; /* type, len, key id, 1..16 password bytes */
		want_max = 19;
		break;
	case BFDCAP_AUTH_KEYED_MD5:
	case BFDCAP_AUTH_METICULOUS_MD5:
		want_min = want_max = 24;
		break;
	case BFDCAP_AUTH_KEYED_SHA1:
	case BFDCAP_AUTH_METICULOUS_SHA1:
		want_min = want_max = 28;
		break;
	default:
		/* Reserved type: keep type and length, nothing else is defined. */
		want_min = 3;
		want_max = 255;
		break;
	}
	if (len < want_min || len > want_max || off + len > pkt->length)
		return malformed(pkt, BFDCAP_M_BAD_AUTH);
	pkt->auth_type = (uint8_t)type;
	pkt->auth_len = (uint8_t)len;
	pkt->auth_key_id = buf[off + 2];
	if (type >= BFDCAP_AUTH_KEYED_MD5 && type <= BFDCAP_AUTH_METICULOUS_SHA1) {
		if (avail < off + 8)
			return malformed(pkt, BFDCAP_M_TRUNCATED);
		pkt->auth_seq = rd32(buf + off + 4);
		pkt->has_auth_seq = 1;
	}
	pkt->has_auth = 1;
	return DECODE_OK;
}

int decode_bfd_control(const uint8_t *buf, size_t avail, size_t udp_payload_len,
		       struct bfdcap_pkt *pkt)
{
	int rc;

	pkt->kind = BFDCAP_KIND_CONTROL;
	pkt->payload_len = (uint32_t)udp_payload_len;
	if (udp_payload_len < BFD_CTRL_LEN)
		return malformed(pkt, BFDCAP_M_SHORT_PAYLOAD);
	if (avail < BFD_CTRL_LEN)
		return malformed(pkt, BFDCAP_M_TRUNCATED);

	pkt->version = buf[0] >> 5;
	pkt->diag = buf[0] & 0x1f;
	pkt->state = buf[1] >> 6;
	pkt->flags = buf[1] & 0x3f;
	pkt->detect_mult = buf[2];
	pkt->length = buf[3];
	pkt->my_disc = rd32(buf + 4);
	pkt->your_disc = rd32(buf + 8);
	pkt->desired_min_tx_us = rd32(buf + 12);
	pkt->required_min_rx_us = rd32(buf + 16);
	pkt->required_min_echo_rx_us = rd32(buf + 20);

	/* RFC 5880 6.8.6, in its order. */
	if (pkt->version != BFD_VERSION)
		return malformed(pkt, BFDCAP_M_BAD_VERSION);
	if (pkt->length < ((pkt->flags & BFD_FLAG_AUTH) ? 26 : BFD_CTRL_LEN))
		return malformed(pkt, BFDCAP_M_BAD_LENGTH);
	if (pkt->length > udp_payload_len)
		return malformed(pkt, BFDCAP_M_LENGTH_GT_PAYLOAD);
	if (pkt->flags & BFD_FLAG_AUTH) {
		rc = decode_auth(buf, avail, pkt);
		if (rc != DECODE_OK)
			return rc;
	}
	if (pkt->detect_mult == 0)
		return malformed(pkt, BFDCAP_M_ZERO_MULT);
	if (pkt->flags & BFD_FLAG_MULTIPOINT)
		return malformed(pkt, BFDCAP_M_MULTIPOINT);
	if (pkt->my_disc == 0)
		return malformed(pkt, BFDCAP_M_ZERO_MY_DISC);
	if (pkt->your_disc == 0 && pkt->state != BFD_STATE_DOWN &&
	    pkt->state != BFD_STATE_ADMIN_DOWN)
		return malformed(pkt, BFDCAP_M_ZERO_YOUR_DISC);
	if ((pkt->flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) == (BFD_FLAG_POLL | BFD_FLAG_FINAL))
		return malformed(pkt, BFDCAP_M_POLL_AND_FINAL);
	return DECODE_OK;
}

static int is_control_port(uint16_t port)
{
	return port == BFD_PORT_CONTROL || port == BFD_PORT_MULTIHOP || port == BFD_PORT_MICRO;
}

/* UDP header at @p with @ip_payload_len bytes declared by IP and @avail captured. */
static int decode_udp(const uint8_t *p, size_t avail, size_t ip_payload_len, struct bfdcap_pkt *pkt)
{
	size_t ulen, cap;

	if (avail < 8)
		return ip_payload_len < 8 ? malformed(pkt, BFDCAP_M_BAD_UDP)
					  : malformed(pkt, BFDCAP_M_TRUNCATED);
	pkt->sport = rd16(p);
	pkt->dport = rd16(p + 2);
	if (is_control_port(pkt->dport))
		pkt->kind = BFDCAP_KIND_CONTROL;
	else if (pkt->dport == BFD_PORT_ECHO || pkt->sport == BFD_PORT_ECHO)
		pkt->kind = BFDCAP_KIND_ECHO;
	else
		return DECODE_NOT_BFD;
	ulen = rd16(p + 4);
	if (ulen < 8 || ulen > ip_payload_len)
		return malformed(pkt, BFDCAP_M_BAD_UDP);
	cap = avail < ulen ? avail : ulen;
	if (pkt->checksum != BFDCAP_CSUM_BAD_IP)
		pkt->checksum =
		    cap == ulen ? (uint8_t)udp_checksum(p, ulen, pkt) : BFDCAP_CSUM_UNVERIFIED;
	if (pkt->kind == BFDCAP_KIND_ECHO) {
		pkt->payload_len = (uint32_t)(ulen - 8);
		return DECODE_OK;
	}
	return decode_bfd_control(p + 8, cap - 8, ulen - 8, pkt);
}

/* IPv4 (RFC 791): header length, total length and fragments checked before UDP. */
static int decode_ipv4(const uint8_t *p, size_t avail, struct bfdcap_pkt *pkt)
{
	size_t ihl, tot;
	unsigned frag;

	if (avail < 20)
		return malformed(pkt, BFDCAP_M_TRUNCATED);
	if ((p[0] >> 4) != 4)
		return malformed(pkt, BFDCAP_M_MALFORMED_IP);
	ihl = (size_t)(p[0] & 0x0f) * 4;
	tot = rd16(p + 2);
	if (ihl < 20 || tot < ihl)
		return malformed(pkt, BFDCAP_M_MALFORMED_IP);
	if (p[9] != IPPROTO_UDP)
		return DECODE_NOT_BFD;
	if (avail < ihl)
		return malformed(pkt, BFDCAP_M_TRUNCATED);
	if (fold16(sum16(p, ihl, 0)) != 0xffff)
		pkt->checksum = BFDCAP_CSUM_BAD_IP; /* RFC 791: a receiver drops the datagram */
	pkt->family = 4;
	pkt->ttl = p[8];
	memcpy(pkt->src, p + 12, 4);
	memcpy(pkt->dst, p + 16, 4);
	frag = rd16(p + 6);
	if (frag & 0x3fff) /* MF set or a non-zero offset: not a whole datagram */
		return malformed(pkt, BFDCAP_M_IP_FRAGMENT);
	/* Ethernet pads short frames: the IP total length bounds the datagram. */
	if (avail > tot)
		avail = tot;
	return decode_udp(p + ihl, avail - ihl, tot - ihl, pkt);
}

/* IPv6 (RFC 8200) with its extension headers: hop-by-hop, routing, destination, AH, fragment. */
static int decode_ipv6(const uint8_t *p, size_t avail, struct bfdcap_pkt *pkt)
{
	size_t plen, off = 40, hlen;
	unsigned nh;

	if (avail < 40)
		return malformed(pkt, BFDCAP_M_TRUNCATED);
	if ((p[0] >> 4) != 6)
		return malformed(pkt, BFDCAP_M_MALFORMED_IP);
	plen = rd16(p + 4);
	nh = p[6];
	pkt->family = 6;
	pkt->ttl = p[7];
	memcpy(pkt->src, p + 8, 16);
	memcpy(pkt->dst, p + 24, 16);
	if (avail > 40 + plen)
		avail = 40 + plen;
	for (;;) {
		switch (nh) {
		case IPPROTO_UDP:
			if (off > 40 + plen)
				return malformed(pkt, BFDCAP_M_MALFORMED_IP);
			return decode_udp(p + off, avail - off, 40 + plen - off, pkt);
		case 0:	 /* hop-by-hop */
		case 43: /* routing */
		case 60: /* destination options */
		case 51: /* AH: length in 4-byte units, minus 2 */
		case 44: /* fragment */
			if (avail < off + 8)
				return off + 8 > 40 + plen ? malformed(pkt, BFDCAP_M_MALFORMED_IP)
							   : malformed(pkt, BFDCAP_M_TRUNCATED);
			if (nh == 44) {
				/* offset != 0 or More set: UDP is not whole here */
				if (rd16(p + off + 2) & 0xfff9)
					return malformed(pkt, BFDCAP_M_IP_FRAGMENT);
				hlen = 8;
			} else if (nh == 51) {
				hlen = ((size_t)p[off + 1] + 2) * 4;
			} else {
				hlen = ((size_t)p[off + 1] + 1) * 8;
			}
			nh = p[off];
			off += hlen;
			if (off > 40 + plen)
				return malformed(pkt, BFDCAP_M_MALFORMED_IP);
			if (off > avail)
				return malformed(pkt, BFDCAP_M_TRUNCATED);
			break;
		default:
			return DECODE_NOT_BFD;
		}
	}
}

static int decode_ethertype(unsigned type, const uint8_t *p, size_t avail, struct bfdcap_pkt *pkt)
{
	/* 802.1Q, 802.1ad and the old QinQ type: 2 bytes of tag, then the next type. */
	while (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
		if (avail < 4)
			return malformed(pkt, BFDCAP_M_TRUNCATED);
		type = rd16(p + 2);
		p += 4;
		avail -= 4;
	}
	if (type == 0x0800)
		return decode_ipv4(p, avail, pkt);
	if (type == 0x86dd)
		return decode_ipv6(p, avail, pkt);
	return DECODE_NOT_BFD;
}

static int decode_ip_any(const uint8_t *p, size_t avail, struct bfdcap_pkt *pkt)
{
	if (avail < 1)
		return malformed(pkt, BFDCAP_M_TRUNCATED);
	if ((p[0] >> 4) == 4)
		return decode_ipv4(p, avail, pkt);
	if ((p[0] >> 4) == 6)
		return decode_ipv6(p, avail, pkt);
	return DECODE_NOT_BFD;
}

int decode_frame(int linktype, const uint8_t *data, size_t caplen, struct bfdcap_pkt *pkt)
{
	int64_t ts_ns = pkt->ts_ns;
	uint32_t af;

	/* Every field is set on the way down except these (v4 leaves 12 address bytes unset). */
	memset(pkt->src, 0, sizeof(pkt->src));
	memset(pkt->dst, 0, sizeof(pkt->dst));
	pkt->has_auth = pkt->has_auth_seq = 0;
	pkt->auth_type = pkt->auth_len = pkt->auth_key_id = 0;
	pkt->auth_seq = 0;
	pkt->sport = pkt->dport = 0;
	pkt->family = pkt->kind = pkt->ttl = 0;
	pkt->payload_len = 0;
	pkt->ts_ns = ts_ns;
	pkt->checksum = BFDCAP_CSUM_UNVERIFIED;
	pkt->malformed = BFDCAP_M_NONE;
	switch (linktype) {
	case BFDCAP_DLT_EN10MB:
		if (caplen < 14)
			return malformed(pkt, BFDCAP_M_TRUNCATED);
		return decode_ethertype(rd16(data + 12), data + 14, caplen - 14, pkt);
	case BFDCAP_DLT_LINUX_SLL: /* 16 bytes, protocol last */
		if (caplen < 16)
			return malformed(pkt, BFDCAP_M_TRUNCATED);
		return decode_ethertype(rd16(data + 14), data + 16, caplen - 16, pkt);
	case BFDCAP_DLT_LINUX_SLL2: /* 20 bytes, protocol first */
		if (caplen < 20)
			return malformed(pkt, BFDCAP_M_TRUNCATED);
		return decode_ethertype(rd16(data), data + 20, caplen - 20, pkt);
	case BFDCAP_DLT_RAW:
	case BFDCAP_DLT_RAW_BSD:
	case BFDCAP_LINKTYPE_RAW:
		return decode_ip_any(data, caplen, pkt);
	case BFDCAP_DLT_IPV4:
		return decode_ipv4(data, caplen, pkt);
	case BFDCAP_DLT_IPV6:
		return decode_ipv6(data, caplen, pkt);
	case BFDCAP_DLT_NULL:
	case BFDCAP_DLT_LOOP:
		/* 4-byte address family: host order for NULL (either order seen), network for LOOP
		 */
		if (caplen < 4)
			return malformed(pkt, BFDCAP_M_TRUNCATED);
		af = linktype == BFDCAP_DLT_LOOP
			 ? rd32(data)
			 : (uint32_t)(data[0] | data[1] << 8 | data[2] << 16 |
				      (uint32_t)data[3] << 24);
		if (af > 0xffff)
			af = rd32(data);
		if (af == 2)
			return decode_ipv4(data + 4, caplen - 4, pkt);
		if (af == 10 || af == 24 || af == 28 || af == 30)
			return decode_ipv6(data + 4, caplen - 4, pkt);
		return DECODE_NOT_BFD;
	default:
		return malformed(pkt, BFDCAP_M_LINKTYPE);
	}
}
