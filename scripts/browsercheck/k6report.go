package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

var k6Data = regexp.MustCompile(`(?s)<script[^>]*\bid="data"[^>]*>(.*?)</script>`)

// checkK6Report checks a report of k6's web dashboard
// (K6_WEB_DASHBOARD_EXPORT): its embedded data (base64 of gzipped JSON,
// as the page's script reads it) has each metric, with samples.
func checkK6Report(page string, metrics []string) (string, error) {
	m := k6Data.FindStringSubmatch(page)
	if m == nil {
		return "", fmt.Errorf("no embedded data (<script id=\"data\">): not a k6 web dashboard report")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(m[1]))
	if err != nil {
		return "", fmt.Errorf("the embedded data is not base64: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("the embedded data is not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		return "", err
	}
	// The data is JSON lines of the dashboard's events: "metric" declares
	// metrics, each "snapshot" and "cumulative" carries values of all.
	known := map[string]bool{}
	events := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(plain)), "\n") {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event == "" {
			return "", fmt.Errorf("line %d of the embedded data is not a dashboard event", i+1)
		}
		events[ev.Event]++
		if ev.Event == "metric" {
			var decl map[string]json.RawMessage
			if err := json.Unmarshal(ev.Data, &decl); err != nil {
				return "", fmt.Errorf("line %d: a metric event without metrics", i+1)
			}
			for name := range decl {
				known[name] = true
			}
		}
	}
	var missing []string
	for _, name := range metrics {
		if !known[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		var have []string
		for k := range known {
			have = append(have, k)
		}
		sort.Strings(have)
		return "", fmt.Errorf("metrics %v missing; the report has %v", missing, have)
	}
	if events["snapshot"] == 0 || events["cumulative"] == 0 {
		return "", fmt.Errorf("no values: %d snapshots, %d cumulative events (a run shorter than K6_WEB_DASHBOARD_PERIOD has none)", events["snapshot"], events["cumulative"])
	}
	return fmt.Sprintf("k6 report: %d metrics, %d snapshots; %s declared, with values", len(known), events["snapshot"], strings.Join(metrics, ", ")), nil
}

// checkK6Summary checks the web dashboard report as Chromium rendered it
// (--dump-dom): its Summary section has a table row for each metric, with
// values; examples/k6/README.md sends readers there for kbkit's metrics.
func checkK6Summary(dom string, metrics []string) (string, error) {
	if len(metrics) == 0 {
		return "", errors.New("no metric to look for")
	}
	if !regexp.MustCompile(`<h2[^>]*>Summary`).MatchString(dom) {
		return "", errors.New("no Summary section rendered")
	}
	for _, m := range metrics {
		row := regexp.MustCompile(`<td[^>]*>` + regexp.QuoteMeta(m) + `</td>((?:<td[^>]*>[^<]+</td>)+)`).FindStringSubmatch(dom)
		if row == nil {
			return "", fmt.Errorf("the Summary section has no row of %s with values", m)
		}
	}
	return fmt.Sprintf("k6 dashboard report: the Summary section shows %s", strings.Join(metrics, ", ")), nil
}
