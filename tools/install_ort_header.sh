#!/usr/bin/env bash
# onnxruntime's C API header, for tools/install_deps.sh: the onnxruntime backend is
# compiled against it and loads libonnxruntime.so at run time (the library builds and
# runs without one). Debian ships it as libonnxruntime-dev from Debian 13 (trixie) on;
# Debian 12 has no such package, in bookworm-backports neither. There, apt downloads
# trixie's libonnxruntime-dev (checked against the archive's signed index, from the
# mirror this machine already uses) into a private folder, and only its headers are
# copied to /usr/local/include/onnxruntime; no trixie package is installed.
set -euo pipefail
sudo_=""
[ "$(id -u)" -eq 0 ] || sudo_="sudo"
if apt-cache show libonnxruntime-dev >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq libonnxruntime-dev >/dev/null
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  . /etc/os-release
  mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' |
           awk -v r="$VERSION_CODENAME" '$2 == r {print $1; exit}')
  [ -n "$mirror" ] || { echo "install_ort_header: no apt source for $VERSION_CODENAME" >&2; exit 1; }
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
    >"$tmp/sources.list"
  mkdir -p "$tmp/lists/partial" "$tmp/deb"
  chmod 755 "$tmp"; chmod 777 "$tmp/deb"
  apt_=(-o Dir::Etc::sourcelist="$tmp/sources.list" -o Dir::Etc::sourceparts=-
        -o Dir::State::Lists="$tmp/lists" -o Debug::NoLocking=1)
  $sudo_ apt-get "${apt_[@]}" update -qq
  (cd "$tmp/deb" && $sudo_ apt-get "${apt_[@]}" download -qq libonnxruntime-dev)
  dpkg-deb -x "$tmp"/deb/libonnxruntime-dev_*.deb "$tmp/root"
  $sudo_ mkdir -p /usr/local/include
  $sudo_ cp -r "$tmp/root/usr/include/onnxruntime" /usr/local/include/
fi
