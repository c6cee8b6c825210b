package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

func k6Page(t *testing.T, data string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(data))
	zw.Close()
	return `<html><script id="data" type="application/json; charset=utf-8; gzip; base64">` +
		base64.StdEncoding.EncodeToString(b.Bytes()) + `</script></html>`
}

func TestCheckK6Report(t *testing.T) {
	page := k6Page(t, `{"event":"config","data":{"title":"k6 dashboard"}}
{"event":"metric","data":{"kbkit_commit":{"type":"trend"}}}
{"event":"metric","data":{"kbkit_echo":{"type":"trend"}}}
{"event":"snapshot","data":[[1],[2]]}
{"event":"cumulative","data":[[1],[2]]}`)
	if msg, err := checkK6Report(page, []string{"kbkit_commit", "kbkit_echo"}); err != nil {
		t.Error(err)
	} else {
		t.Log(msg)
	}
	if _, err := checkK6Report(page, []string{"kbkit_fanout"}); err == nil || !strings.Contains(err.Error(), "kbkit_fanout") {
		t.Errorf("a missing metric passed: %v", err)
	}
	noValues := k6Page(t, `{"event":"metric","data":{"kbkit_commit":{"type":"trend"}}}`)
	if _, err := checkK6Report(noValues, []string{"kbkit_commit"}); err == nil {
		t.Error("a metric without values passed")
	}
	if _, err := checkK6Report("<html></html>", []string{"kbkit_commit"}); err == nil {
		t.Error("a page without data passed")
	}
}
