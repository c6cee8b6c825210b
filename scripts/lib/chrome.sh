# chrome.sh — headless Chromium for the CI scripts (sourced; needs $WORK,
# say and die): finds Debian's chromium, installing it with apt (as root)
# when missing, and defines
#
#   chrome ARGS... URL   one headless run with a fresh profile under
#                        $WORK, nothing fetched from the network; bounded.
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
	say "installing chromium"
	t0=$(date +%s)
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq chromium >/dev/null
	CHROME=$(command -v chromium) || die "chromium did not install"
	say "apt-get install chromium took $(( $(date +%s) - t0 ))s"
fi
"$CHROME" --version 2>/dev/null >&2 || die "$CHROME does not run"

chrome() {
	local profile
	profile=$(mktemp -d "$WORK/profile.XXXXXX")
	timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
		--hide-scrollbars "$@" 2>>"$WORK/chrome.log"
}
