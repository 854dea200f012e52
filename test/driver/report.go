// Error reporting for the driver: every failure becomes one machine-readable JSON line on stderr,
// {"code":N,"msg":...,"details":...,"source":...,"error":...}. When a CNI error object is found
// anywhere in libcni's wrapped error chain (a plugin's error JSON, or libcni's own validation of
// container ID / network / interface names) its code, msg and details are reported with source
// "plugin"; any other failure (config loading, unparsable result, timeout) has code 0 and source
// "driver". "error" is always the whole wrapped message.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/containernetworking/cni/pkg/types"
)

// errorLine is the JSON object printed on stderr for a failed run.
type errorLine struct {
	Code    uint   `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details,omitempty"`
	Source  string `json:"source"`
	Error   string `json:"error"`
}

// driverFailure marks errors raised by the driver itself rather than by a plugin.
type driverFailure struct{ msg string }

func (e *driverFailure) Error() string { return e.msg }

// driverError builds a driver-side error from a format string.
func driverError(format string, args ...interface{}) error {
	return &driverFailure{msg: fmt.Sprintf(format, args...)}
}

// reportError prints err as one JSON line on stderr, on a line of its own.
func reportError(err error) {
	line := errorLine{Source: "driver", Msg: err.Error(), Error: err.Error()}
	var cniErr *types.Error
	if errors.As(err, &cniErr) {
		line.Code = cniErr.Code
		line.Msg = cniErr.Msg
		line.Details = cniErr.Details
		line.Source = "plugin"
	}
	data, mErr := json.Marshal(line)
	if mErr != nil {
		data = []byte(fmt.Sprintf(`{"code":0,"msg":%q,"source":"driver"}`, err.Error()))
	}
	stderr.startLine()
	stderr.Write(append(data, '\n'))
}

// lineTrackingWriter forwards to os.Stderr and remembers whether the last byte ended a line, so that
// the error line never gets glued to a plugin's unterminated stderr output.
type lineTrackingWriter struct {
	mu      sync.Mutex
	midLine bool
}

// stderr is the driver's stderr, shared with libcni's RawExec (plugin stderr is copied to it).
var stderr = &lineTrackingWriter{}

func (w *lineTrackingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(p) > 0 {
		w.midLine = p[len(p)-1] != '\n'
	}
	return os.Stderr.Write(p)
}

// startLine emits a newline if the previous output stopped in the middle of a line.
func (w *lineTrackingWriter) startLine() {
	w.mu.Lock()
	mid := w.midLine
	w.mu.Unlock()
	if mid {
		w.Write([]byte("\n"))
	}
}
