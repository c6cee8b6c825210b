// many-pages: two windows per page over many pages, the arrival rate
// ramping up and down (k6's ramping-arrival-rate executor), the
// many-pages workload of kbkit loadgen.
//
//   KBKIT_URL=... KBKIT_TOKEN=... bin/k6-kbkit run examples/k6/many-pages.js
//
// Environment: KBKIT_URL, KBKIT_TOKEN (required); KBKIT_EDITORS (default
// 32), KBKIT_PAGES (default 32), KBKIT_RATE (peak commands/s, default
// 150), KBKIT_RUN_ID, KBKIT_JSON ({segment} in it names each process's
// file apart), KBKIT_PAGES_BY_SEGMENT (default on: each page's two windows
// in one process of a --execution-segment run; 0 turns it off).
import kbkit from 'k6/x/kbkit';

const editors = Number(__ENV.KBKIT_EDITORS || 32);
const peak = Number(__ENV.KBKIT_RATE || 150);

export const options = {
  scenarios: {
    ramp: {
      executor: 'ramping-arrival-rate',
      startRate: 10,
      timeUnit: '1s',
      preAllocatedVUs: editors,
      maxVUs: editors,
      stages: [
        { target: peak, duration: '5s' },
        { target: peak, duration: '10s' },
        { target: 10, duration: '5s' },
      ],
    },
  },
  thresholds: {
    kbkit_commit: ['p(99)<250'],
    kbkit_fanout: ['p(99)<250'],
    'kbkit_commit{type:create-after}': ['p(99)<250'],
    kbkit_errors: ['count==0'],
    kbkit_refetches: ['count<5'],
  },
};

export function setup() {
  return kbkit.setup({
    url: __ENV.KBKIT_URL,
    token: __ENV.KBKIT_TOKEN,
    workload: 'many-pages',
    pages: Number(__ENV.KBKIT_PAGES || 32),
    runId: __ENV.KBKIT_RUN_ID,
    pagesBySegment: __ENV.KBKIT_PAGES_BY_SEGMENT !== '0',
  });
}

export default function (data) {
  kbkit.workloads.manyPages(kbkit.editor(data));
}

export function teardown(data) {
  kbkit.finish(data, { json: __ENV.KBKIT_JSON });
}
