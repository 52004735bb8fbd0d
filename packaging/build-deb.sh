#!/bin/sh
# build-deb.sh OUTDIR [VERSION] - build the xdp-bfd source and binary packages from this tree.
#
# dpkg-buildpackage writes next to the source directory, so the tree's files (tracked, and new
# ones not ignored) are copied to OUTDIR/src/xdp-bfd-VERSION first; the packages land in
# OUTDIR/src and the .deb is copied to OUTDIR. VERSION (default: debian/changelog's) adds a
# changelog entry in the copy only: a newer build to upgrade to, for the tests. lintian then
# checks the .changes (source and binary); any tag it prints fails the build
# (debian/source/lintian-overrides explains what is overridden).
set -eu
out=$1
top=$(cd "$(dirname "$0")/.." && pwd)
base=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
version=${2:-$base}
src="$out/src/xdp-bfd-$version"
rm -rf "$out/src"
mkdir -p "$src"
(cd "$top" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src")
if [ "$version" != "$base" ]; then
	{
		printf 'xdp-bfd (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * Rebuild of %s as %s.\n\n' "$base" "$version"
		printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -l "$top/debian/changelog" -S Maintainer)" \
			"$(date -R)"
		cat "$top/debian/changelog"
	} >"$src/debian/changelog"
fi
# Not make's variables of the caller (make O=DIR deb): debian/rules would inherit O=DIR through
# MAKEFLAGS, build there and remove DIR on clean.
unset MAKEFLAGS MFLAGS MAKELEVEL
(cd "$src" && dpkg-buildpackage -us -uc -sa >../build.log 2>&1) || {
	tail -40 "$out/src/build.log"
	echo "build-deb: dpkg-buildpackage failed; full log in $out/src/build.log" >&2
	exit 1
}
changes=$(ls "$out"/src/xdp-bfd_"$version"_*.changes)
cp "$out"/src/xdp-bfd_"$version"_*.deb "$out/"
# (lintian's own remark about running as root is not about the package)
lintian --display-level '>=pedantic' "$changes" 2>&1 |
	grep -v '^running with root privileges is not recommended!$' >"$out/lintian.log" || true
if [ -s "$out/lintian.log" ]; then
	cat "$out/lintian.log"
	echo "build-deb: lintian tags (above): fix them or explain them in an override" >&2
	exit 1
fi
ls "$out"/xdp-bfd_"$version"_*.deb
