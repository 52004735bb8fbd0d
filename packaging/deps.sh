#!/bin/sh
# Install the Debian packages listed in packaging/deps.txt that are not installed yet.
# Idempotent: with everything present it only runs dpkg-query. Needs root to install.
set -eu
here=$(dirname "$0")
missing=""
for p in $(grep -v '^#' "$here/deps.txt" | tr -s ' \n' '\n' | grep -v '^$'); do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "deps: all packages present"
	exit 0
fi
echo "deps: installing:$missing"
if [ "$(id -u)" != 0 ]; then
	echo "deps: need root to install packages" >&2
	exit 1
fi
# tshark asks whether non-root users may capture; answer it up front so nothing prompts.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
