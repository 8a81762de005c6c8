# Shared by the scripts that install what they need (setup.sh,
# bench-setup.sh, cross-test.sh, package-deb.sh; sourced, not run): progress
# lines, running a command as root, installing the Debian packages of the
# caller's PACKAGES array that are missing, and starting in the checkout
# with cargo on PATH. The caller sets SCRIPT_NAME, which prefixes errors.

# This file's directory, resolved while it is being sourced (the caller may cd later).
packages_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

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

# Changes to the checkout's top directory (sets `repo`) and puts rustup's
# cargo on PATH if the shell has none (root's non-login shells, CI).
in_repo_with_cargo() {
    repo=$(cd "$packages_lib_dir/../.." && pwd)
    cd "$repo"
    command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
}
