/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ports.h - start-up checks of the ports the kernel hands out by itself, in the engine's
 * network namespace (net.ipv4.ip_local_port_range and ip_local_reserved_ports, which also
 * govern IPv6):
 *  - the bfdd data-plane port (50700) inside the ephemeral range and not reserved: a connect()
 *    to it while nothing listens there can be given that very port as its source and connect to
 *    itself, holding the port so that neither bfdd nor the engine can listen on it again;
 *  - the engine's own source ports (tx.h) reserved, or inside the ephemeral range.
 * Each finding is one warn line; nothing is changed.
 */
#ifndef ENGINE_PORTS_H
#define ENGINE_PORTS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * ports_check_dplane() - warn when TCP @port, which the engine listens on (@listening) or
 * connects to bfdd on, is in the ephemeral range and not reserved:
 * "ports: the data-plane port P (which the engine listens on|bfdd listens on) is in the
 * ephemeral range A-B and not in net.ipv4.ip_local_reserved_ports: ..."
 */
void ports_check_dplane(uint16_t port, bool listening);
/*
 * ports_check_source() - warn when any of [@first, @last] is in ip_local_reserved_ports
 * ("ports: net.ipv4.ip_local_reserved_ports holds N of the engine's source ports F-L ...") or in
 * the ephemeral range ("ports: the ephemeral range A-B overlaps the engine's source ports ...").
 */
void ports_check_source(uint16_t first, uint16_t last);

/* ports_reserved() - whether @port is listed in the reserved-ports text @list ("1,5-9"). */
bool ports_reserved(const char *list, uint16_t port);

#endif
