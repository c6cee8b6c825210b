package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// domWhen opens url in a headless Chromium driven over the DevTools
// protocol (--remote-debugging-pipe: commands on fd 3, replies on fd 4),
// waits until the JavaScript expression ready is true (a page whose
// script finishes after the load event, which --dump-dom does not wait
// for) and returns the DOM then. The page's console messages and
// exceptions go to stderr. chrome is the browser command, profile a
// fresh directory; the browser is ended on every path.
func domWhen(chrome, profile, url, ready string, timeout time.Duration) (string, error) {
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		return "", err
	}
	fromChrome, chromeEnd, err := os.Pipe()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+profile,
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, chromeEnd}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	toChrome.Close()
	chromeEnd.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		ourEnd.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		fromChrome.Close()
	}()
	c := &cdp{w: ourEnd, r: bufio.NewReader(fromChrome), deadline: time.Now().Add(timeout)}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return "", err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return "", err
	}
	s := att.SessionID
	if err := c.call(s, "Runtime.enable", nil, nil); err != nil {
		return "", err
	}
	if err := c.call(s, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		return "", err
	}
	// Until the page's document exists, ready may throw (a null element):
	// that is not ready yet, and the last such error is reported if the
	// page never gets there.
	var last error
	for {
		var ok bool
		err := c.eval(s, "Boolean("+ready+")", &ok)
		var exc *evalException
		switch {
		case errors.As(err, &exc):
			last = err
		case err != nil:
			return "", err
		case ok:
			last = nil
		}
		if ok && err == nil {
			break
		}
		if time.Now().After(c.deadline) {
			return "", fmt.Errorf("%s: %q not true after %s (last: %v)", url, ready, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var dom string
	if err := c.eval(s, "document.documentElement.outerHTML", &dom); err != nil {
		return "", err
	}
	_ = c.call("", "Browser.close", nil, nil)
	return dom, nil
}

// evalException is an exception the page's JavaScript threw.
type evalException struct{ expr, text string }

func (e *evalException) Error() string { return fmt.Sprintf("evaluating %q: %s", e.expr, e.text) }

// cdp is one DevTools connection over a pipe: messages are JSON objects
// each ended by a NUL byte.
type cdp struct {
	w        *os.File
	r        *bufio.Reader
	next     int
	deadline time.Time
}

func (c *cdp) eval(session, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := c.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return &evalException{expr: expr, text: r.Exception.Text}
	}
	return json.Unmarshal(r.Result.Value, out)
}

// call sends one command and reads until its reply, printing the
// console messages and exceptions that arrive meanwhile.
func (c *cdp) call(session, method string, params, out any) error {
	c.next++
	msg := map[string]any{"id": c.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return fmt.Errorf("chromium: %s: %w", method, err)
	}
	for {
		if time.Now().After(c.deadline) {
			return fmt.Errorf("chromium: %s: no reply in time", method)
		}
		line, err := c.r.ReadBytes(0)
		if err != nil {
			return fmt.Errorf("chromium: %s: %w", method, err)
		}
		var m struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(bytes.TrimSuffix(line, []byte{0}), &m); err != nil {
			return fmt.Errorf("chromium: %s: %w", method, err)
		}
		switch {
		case m.Method == "Runtime.consoleAPICalled" || m.Method == "Runtime.exceptionThrown":
			fmt.Fprintf(os.Stderr, "browsercheck: page %s: %s\n", m.Method, m.Params)
		case m.ID == c.next && m.Error != nil:
			return errors.New("chromium: " + method + ": " + m.Error.Message)
		case m.ID == c.next:
			if out == nil {
				return nil
			}
			return json.Unmarshal(m.Result, out)
		}
	}
}
