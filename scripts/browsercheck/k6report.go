package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
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
	var data struct {
		Metrics    map[string]json.RawMessage `json:"metrics"`
		Snapshot   []json.RawMessage          `json:"snapshot"`
		Cumulative map[string]json.RawMessage `json:"cumulative"`
	}
	if err := json.Unmarshal(plain, &data); err != nil {
		return "", fmt.Errorf("the embedded data is not the dashboard's JSON: %v", err)
	}
	var missing []string
	for _, name := range metrics {
		_, known := data.Metrics[name]
		_, summed := data.Cumulative[name]
		if !known || !summed {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		var have []string
		for k := range data.Metrics {
			have = append(have, k)
		}
		sort.Strings(have)
		return "", fmt.Errorf("metrics %v missing (or without values); the report has %v", missing, have)
	}
	return fmt.Sprintf("k6 report: %d metrics, %d snapshots; %s present with values", len(data.Metrics), len(data.Snapshot), strings.Join(metrics, ", ")), nil
}
