package main

import (
	"fmt"
	"regexp"
	"strings"
)

// checkMatrix checks a results matrix's DOM after its script ran, opened
// at #OPEN (a cell's link into a drill-down that is closed by default):
// a row per NAME=TIER with that tier and a cell per suite, the linked
// drill-down open, failing cases with their diff lines coloured by the
// script, and the changes since the earlier matrix.
func checkMatrix(dom, open string, rows []string) (string, error) {
	head := regexp.MustCompile(`(?s)<table id="matrix">\s*<tbody>\s*<tr>(.*?)</tr>|<table id="matrix">\s*<tr>(.*?)</tr>`).FindStringSubmatch(dom)
	if head == nil {
		return "", fmt.Errorf("no matrix table")
	}
	suites := count(head[1]+head[2], `<th>`) - 3 // implementation, total, tier
	if suites < 4 {
		return "", fmt.Errorf("no matrix with 4 suites (%d columns)", suites)
	}
	for _, r := range rows {
		name, tier, _ := strings.Cut(r, "=")
		m := regexp.MustCompile(`(?s)<tr data-impl="` + regexp.QuoteMeta(name) + `" data-tier="([^"]+)">(.*?)</tr>`).FindStringSubmatch(dom)
		if m == nil {
			return "", fmt.Errorf("no row for %s", name)
		}
		if m[1] != tier {
			return "", fmt.Errorf("%s is %s, want %s", name, m[1], tier)
		}
		if n := count(m[2], `<td class="[a-z]+" data-suite=`); n != suites {
			return "", fmt.Errorf("%s has %d suite cells, want %d", name, n, suites)
		}
	}
	anchor, _, _ := strings.Cut(open, "-"+strings.SplitN(open, "-", 3)[2])
	if !regexp.MustCompile(`<details id="` + regexp.QuoteMeta(anchor) + `" data-impl="[^"]+" open=""`).MatchString(dom) {
		return "", fmt.Errorf("the drill-down %s that #%s links into is not open (the script did not run)", anchor, open)
	}
	if !strings.Contains(dom, `<h4 id="`+open+`" class="suite">`) {
		return "", fmt.Errorf("no suite heading %s", open)
	}
	fails := count(dom, `<div class="case v-fail" data-case="[^"]+" data-verdict="fail"`)
	del, ins := count(dom, `<span class="del">`), count(dom, `<span class="ins">`)
	if fails == 0 || del == 0 || ins == 0 {
		return "", fmt.Errorf("%d failing cases, %d/%d coloured diff lines", fails, del, ins)
	}
	if !strings.Contains(dom, `<tr data-kind="new implementation">`) {
		return "", fmt.Errorf("the changes since the earlier matrix are missing")
	}
	return fmt.Sprintf("matrix: %d rows as expected, %d suites, drill-down %s open, %d failing cases with %d/%d coloured diff lines, changes listed",
		len(rows), suites, anchor, fails, del, ins), nil
}
