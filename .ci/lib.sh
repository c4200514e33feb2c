# Shared by .ci/docker-up.sh and .ci/slurm-up.sh (sourced, not run): messages, root, packages.
# The sourcing script sets CI_NAME (the prefix of its messages) first.

say() { echo "${CI_NAME}: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && SUDO="sudo -n" || die "must run as root (or with passwordless sudo)"
fi

# apt_install WHY PACKAGE...: install the Debian packages named (none: nothing to do)
apt_install() {
    local why=$1
    shift
    [ $# -gt 0 ] || return 0
    say "installing $*${why}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null || die "apt-get update failed"
    $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
        || die "apt-get install $* failed"
}
