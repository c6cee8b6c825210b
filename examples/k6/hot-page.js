// hot-page: every editor holds a window on one page and the commands
// arrive at an open rate (k6's constant-arrival-rate executor), as
// `kbkit loadgen run --workload hot-page --rate 100 --editors 16` does.
//
//   kbkit serve --addr 127.0.0.1:0 > server.json &
//   export KBKIT_URL=$(jq -r .url server.json) KBKIT_TOKEN=$(jq -r .token server.json)
//   bin/k6-kbkit run examples/k6/hot-page.js
//
// Environment: KBKIT_URL, KBKIT_TOKEN (required); KBKIT_RATE (commands/s,
// default 100), KBKIT_EDITORS (default 16), KBKIT_DURATION (default 10s),
// KBKIT_P99 (the latency thresholds' p99 bound in ms, default 250),
// KBKIT_RUN_ID (required with --execution-segment: the same in every
// process), KBKIT_JSON (write kbkit's result there).
import kbkit from 'k6/x/kbkit';

const rate = Number(__ENV.KBKIT_RATE || 100);
const editors = Number(__ENV.KBKIT_EDITORS || 16);
const p99 = `p(99)<${Number(__ENV.KBKIT_P99 || 250)}`;

export const options = {
  scenarios: {
    hot: {
      executor: 'constant-arrival-rate',
      rate: rate,
      timeUnit: '1s',
      duration: __ENV.KBKIT_DURATION || '10s',
      preAllocatedVUs: editors,
      maxVUs: editors,
    },
  },
  thresholds: {
    kbkit_commit: [p99],
    kbkit_echo: [p99],
    kbkit_fanout: [p99],
    kbkit_convergence: ['max<5000'],
    kbkit_errors: ['count==0'],
    kbkit_reconnects: ['count==0'],
  },
};

export function setup() {
  return kbkit.setup({
    url: __ENV.KBKIT_URL,
    token: __ENV.KBKIT_TOKEN,
    workload: 'hot-page',
    runId: __ENV.KBKIT_RUN_ID,
  });
}

// One operation of this VU's editor per iteration.
export default function (data) {
  kbkit.workloads.hotPage(kbkit.editor(data));
}

// After the load: every window reaches the page's head (kbkit_convergence),
// then closes; KBKIT_JSON gets kbkit's result for `kbkit loadgen report`.
export function teardown(data) {
  kbkit.finish(data, { json: __ENV.KBKIT_JSON });
}
