# Shared by scripts/setup.sh and scripts/bench-setup.sh (sourced, not run):
# progress lines, running a command as root, and installing the Debian
# packages of the caller's PACKAGES array that are missing. The caller sets
# SCRIPT_NAME, which prefixes errors.

say() { printf '==> %s\n' "$*"; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "$SCRIPT_NAME: '$*' needs root; run this script as root or install sudo" >&2
        exit 1
    fi
}

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        say "system packages present: ${PACKAGES[*]}"
        return
    fi
    say "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}
