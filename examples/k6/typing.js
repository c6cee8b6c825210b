// typing: editors type keystroke bursts into two-window pages (the typing
// workload of kbkit loadgen), each VU waiting for its keystroke's commit,
// then thinking (k6's constant-vus executor: the closed model).
//
//   KBKIT_URL=... KBKIT_TOKEN=... bin/k6-kbkit run examples/k6/typing.js
//
// Environment: KBKIT_URL, KBKIT_TOKEN (required); KBKIT_EDITORS (default
// 8), KBKIT_DURATION (default 10s), KBKIT_THINK (seconds between
// keystrokes, default 0.05), KBKIT_RUN_ID, KBKIT_JSON.
import { sleep } from 'k6';
import kbkit from 'k6/x/kbkit';

const think = Number(__ENV.KBKIT_THINK || 0.05);

export const options = {
  vus: Number(__ENV.KBKIT_EDITORS || 8),
  duration: __ENV.KBKIT_DURATION || '10s',
  thresholds: {
    kbkit_commit: ['p(95)<100', 'p(99)<250'],
    // Fan-out of keystrokes only (the workload also presses Enter).
    'kbkit_fanout{type:edit-text}': ['p(99)<250'],
    kbkit_errors: ['count==0'],
    kbkit_rejections: ['count<10'],
  },
};

export function setup() {
  return kbkit.setup({
    url: __ENV.KBKIT_URL,
    token: __ENV.KBKIT_TOKEN,
    workload: 'typing',
    runId: __ENV.KBKIT_RUN_ID,
  });
}

export default function (data) {
  kbkit.workloads.typing(kbkit.editor(data));
  sleep(think * (0.5 + Math.random()));
}

export function teardown(data) {
  kbkit.finish(data, { json: __ENV.KBKIT_JSON });
}
