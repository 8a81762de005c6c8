# shellcheck shell=bash disable=SC2154 # `repo` is set by the sourcing script
# Shared by the studies' run.sh scripts (sourced, not run): messages, the packages a study needs, the
# mcfs binary it runs, and its replays. The caller sets `repo` (the checkout) and `PACKAGES` before calling.

say() { printf '==> %s\n' "$*"; }
die() { echo "run.sh: $*" >&2; exit 1; }

# install_packages: apt-installs whichever of PACKAGES are missing.
install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# build: sets `mcfs` to $MCFS_BIN, or builds target/release/mcfs.
build() {
    if [ -n "${MCFS_BIN:-}" ]; then
        mcfs=$MCFS_BIN
    else
        say "building mcfs (release)"
        (cd "$repo" && cargo build --release -q -p mcfs)
        mcfs=${CARGO_TARGET_DIR:-$repo/target}/release/mcfs
    fi
    [ -x "$mcfs" ] || die "$mcfs is not an executable"
}

# replay_all TRACES OUT DEVICE CONFIG_DIR CONFIG...: replays every trace TRACES/GROUP/TRACE.* under each
# CONFIG_DIR/CONFIG.toml on DEVICE with `mcfs sim --json`, two at a time, into OUT/GROUP/TRACE/CONFIG.json;
# a failed replay names its inputs and stops the study.
replay_all() {
    local traces=$1 out=$2 device=$3 config_dir=$4 jobs=() group trace name config
    shift 4
    for group in "$traces"/*/; do
        for trace in "$group"*; do
            name=$(basename "${trace%.*}")
            mkdir -p "$out/$(basename "$group")/$name"
            for config in "$@"; do
                jobs+=("$trace" "$config_dir/$config.toml" "$out/$(basename "$group")/$name/$config.json")
            done
        done
    done
    say "replaying $((${#jobs[@]} / 3)) trace × config pairs on the simulated $device (2 at a time)"
    printf '%s\0' "${jobs[@]}" | MCFS=$mcfs DEVICE=$device xargs -0 -n 3 -P 2 sh -c '
        "$MCFS" sim --trace "$1" --config "$2" --device-profile "$DEVICE" --json >"$3.tmp" && mv "$3.tmp" "$3" ||
            { echo "run.sh: mcfs sim failed on $1 with $2" >&2; exit 255; }' sim ||
        die "some replays failed"
}
