package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// inProcess is the stack's transport when Options.InProcess is set: an
// http.RoundTripper that serves a request by calling the handler of the
// request's host on a goroutine of its own, as a server would, with no
// socket. Everything a round trip waits on is a channel or a timer, so in
// a testing/synctest bubble the whole stack runs in virtual time.
type inProcess struct {
	handlers map[string]http.Handler // by URL host
	serving  sync.WaitGroup          // handlers still running
}

func newInProcess() *inProcess { return &inProcess{handlers: map[string]http.Handler{}} }

// CloseIdleConnections does nothing: there are no connections.
func (t *inProcess) CloseIdleConnections() {}

// RoundTrip serves req with its host's handler. The handler's request has
// a context of its own that is cancelled when the caller's is done, as a
// server sees its client hang up: the caller's deadline and values do not
// travel (only headers do, retry.HeaderTimeout among them). RoundTrip
// returns when the handler returns, or with the caller's context error as
// soon as that is done, leaving the handler to notice the cancel (or not:
// an ignore-cancel provider works on).
func (t *inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	h := t.handlers[req.URL.Host]
	if h == nil {
		return nil, fmt.Errorf("sim: no in-process server at %s", req.URL.Host)
	}
	cctx := req.Context()
	if err := cctx.Err(); err != nil {
		return nil, context.Cause(cctx)
	}
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(cctx, cancel)
	// A shallow copy: the handlers only read the header, and the caller
	// does not touch its request again (a deep Clone was an eighth of a
	// run's CPU).
	sreq := req.WithContext(sctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.Host = req.URL.Host
	sreq.RemoteAddr = "in-process"
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	done := make(chan struct{})
	t.serving.Add(1)
	go func() {
		defer t.serving.Done()
		defer close(done)
		defer cancel() // a server cancels the request's context when ServeHTTP returns
		defer stop()
		h.ServeHTTP(rec, sreq)
	}()
	select {
	case <-done:
		// A caller that gave up at the very moment the answer came does
		// not take it: one rule, so the outcome does not depend on which
		// goroutine ran first.
		if err := cctx.Err(); err != nil {
			return nil, context.Cause(cctx)
		}
		return rec.response(req), nil
	case <-cctx.Done():
		return nil, context.Cause(cctx)
	}
}

// wait blocks until every handler has returned.
func (t *inProcess) wait() { t.serving.Wait() }

// recorder is the handler's ResponseWriter: the whole answer is kept and
// handed over when the handler returns (the sim's handlers write once, at
// the end).
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

func (r *recorder) response(req *http.Request) *http.Response {
	code := r.code
	if code == 0 {
		code = http.StatusOK
	}
	body := r.body.Bytes() // the handler has returned: the buffer is ours
	return &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        r.header, // the handler has returned: nobody writes it now
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
