package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/retrytop/retrytop/dump"
)

// openPTY opens a pseudo-terminal pair with the standard library (Linux's
// /dev/ptmx): the terminal side a command writes to and the side a
// terminal emulator would read. It skips where there is none.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to test with: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("TIOCGPTN: %v", e)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("TIOCSPTLCK: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal side: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// executeTo runs the command line with standard output on out.
func executeTo(t *testing.T, out *os.File, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var errb strings.Builder
	cmd.SetOut(out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return errb.String(), err
}

// `export -o -` on a terminal wrote a target's raw escape bytes
// there, to be obeyed. It is refused on a terminal, with nothing written;
// a file, a pipe or /dev/null (a character device, not a terminal) still
// gets the label values byte for byte, as promtool needs them.
func TestExportToATerminalWritesNoRawEscapes(t *testing.T) {
	hostile := "pay\x1b]0;pwned\x07\x1b[2J\u202e"
	path := filepath.Join(t.TempDir(), "hostile.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body := "retry_originals_total{dependency=\"" + hostile + "\"} 1\n" // raw bytes, as a target serves them
	for i := range 3 {
		if err := w.Append("app", recT0.Add(time.Duration(i)*time.Second), "text/plain; version=0.0.4", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	master, tty := openPTY(t)
	stderr, err := executeTo(t, tty, "export", path, "-o", "-")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "a terminal would obey") {
		t.Fatalf("export -o - to a terminal: %v (stderr %q), want a usage error naming the terminal", err, stderr)
	}
	// Nothing reached the terminal: a marker written after the command is
	// the first thing its other side reads.
	if _, err := tty.WriteString("END\n"); err != nil {
		t.Fatal(err)
	}
	if err := master.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Skipf("no read deadline on the pty: %v", err)
	}
	buf := make([]byte, 4096)
	n, err := master.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "END") {
		t.Errorf("the terminal received %q (%v), want only the marker", buf[:n], err)
	}

	for _, name := range []string{"/dev/null", filepath.Join(t.TempDir(), "out.om")} {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		stderr, err := executeTo(t, f, "export", path, "-o", "-")
		f.Close()
		if err != nil {
			t.Fatalf("export -o - to %s: %v (stderr %q)", name, err, stderr)
		}
		if name == "/dev/null" {
			continue
		}
		got, err := os.ReadFile(name)
		if err != nil || !strings.Contains(string(got), hostile) {
			t.Errorf("export to a file lost the raw label value: %v\n%q", err, got)
		}
	}
}
