package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of utime/stime in
// /proc/<pid>/stat. It is 100 on every Linux architecture Go supports.
const clockTicks = 100

// procs is every process the bench started. Each one leads its own process
// group (so a shell script and what it starts go together) and dies with
// the bench (Pdeathsig). stopAll signals every group, TERM then KILL.
type procs struct {
	mu   sync.Mutex
	list []*proc
	// groups are process groups started by others on the bench's behalf
	// (a JVM a start script left running) that stopAll must end too.
	groups []int
}

// proc is one started process.
type proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string // path of the combined stdout/stderr log (unless captured)

	done   chan struct{}
	waitMu sync.Mutex
	state  *os.ProcessState
	err    error
}

// start runs cmd in a new process group, its output appended to logPath
// (when stdout is not already set). The process is registered for stopAll.
func (ps *procs) start(name string, cmd *exec.Cmd, logPath string) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var logf *os.File
	if cmd.Stdout == nil && logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		logf = f
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		if logf != nil {
			logf.Close()
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.waitMu.Lock()
		p.state, p.err = cmd.ProcessState, err
		p.waitMu.Unlock()
		if logf != nil {
			logf.Close()
		}
		close(p.done)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	return p, nil
}

// adoptGroup registers a process group the bench did not start directly
// but caused to run (the broker a start script left in the background),
// for stopAll to end.
func (ps *procs) adoptGroup(pgid int) {
	if pgid <= 1 {
		return
	}
	ps.mu.Lock()
	ps.groups = append(ps.groups, pgid)
	ps.mu.Unlock()
}

// PID is the process id.
func (p *proc) PID() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Rusage is the process's resource usage after it ended (nil before).
func (p *proc) Rusage() *syscall.Rusage {
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	if p.state == nil {
		return nil
	}
	ru, _ := p.state.SysUsage().(*syscall.Rusage)
	return ru
}

// stop ends p's process group: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p.Exited() {
		// The leader is gone; its group may not be.
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// stopAll ends every registered process, newest first, and every adopted
// process group. Safe to call more than once.
func (ps *procs) stopAll() {
	ps.mu.Lock()
	list, groups := ps.list, ps.groups
	ps.list, ps.groups = nil, nil
	ps.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].stop(5 * time.Second)
	}
	for _, g := range groups {
		_ = syscall.Kill(-g, syscall.SIGTERM)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, g := range groups {
		for groupAlive(g) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}

// groupAlive reports whether process group g still has a member.
func groupAlive(g int) bool { return syscall.Kill(-g, 0) == nil }

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts a connection, p (when non-nil) exits,
// or ctx ends.
func waitTCP(ctx context.Context, addr string, p *proc) error {
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before %s accepted connections (log %s)", p.Name, addr, p.Log)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nothing accepted connections on %s: %w", addr, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cpuTime is the process's user+system CPU time, all threads, from
// /proc/<pid>/stat (10 ms resolution).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// After the command: state is field 3; utime and stime are 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad stat times")
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// rss is the process's resident set size in bytes (VmRSS).
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// tcpSocket is one line of /proc/net/tcp{,6}.
type tcpSocket struct {
	localPort, remotePort int
	state                 int // 0x01 established, 0x0A listen
	inode                 uint64
}

// readTCP parses /proc/net/tcp and /proc/net/tcp6.
func readTCP() ([]tcpSocket, error) {
	var out []tcpSocket
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		first := true
		for sc.Scan() {
			if first {
				first = false
				continue
			}
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			lp := portOf(fs[1])
			rp := portOf(fs[2])
			st, _ := strconv.ParseInt(fs[3], 16, 32)
			ino, _ := strconv.ParseUint(fs[9], 10, 64)
			out = append(out, tcpSocket{localPort: lp, remotePort: rp, state: int(st), inode: ino})
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func portOf(hexAddr string) int {
	i := strings.LastIndexByte(hexAddr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseInt(hexAddr[i+1:], 16, 32)
	if err != nil {
		return -1
	}
	return int(p)
}

// serverConns counts established connections whose local port is port:
// the server side of every client connection to that port.
func serverConns(port int) int {
	socks, err := readTCP()
	if err != nil {
		return -1
	}
	n := 0
	for _, s := range socks {
		if s.state == 0x01 && s.localPort == port {
			n++
		}
	}
	return n
}

// socketInodes is the set of socket inodes pid has open.
func socketInodes(pid int) map[uint64]bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return map[uint64]bool{}
	}
	out := make(map[uint64]bool, len(fds))
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		if v, ok := strings.CutPrefix(l, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
				out[ino] = true
			}
		}
	}
	return out
}

// pidListening finds the process that holds the listening socket of port
// (by the socket's inode in /proc/<pid>/fd), or 0.
func pidListening(port int) int {
	socks, err := readTCP()
	if err != nil {
		return 0
	}
	want := map[string]bool{}
	for _, s := range socks {
		if s.state == 0x0A && s.localPort == port && s.inode != 0 {
			want[fmt.Sprintf("socket:[%d]", s.inode)] = true
		}
	}
	if len(want) == 0 {
		return 0
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", d.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join("/proc", d.Name(), "fd", fd.Name()))
			if err == nil && want[l] {
				return pid
			}
		}
	}
	return 0
}

// tail returns the last n bytes of a file, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

// runBounded runs a command to completion within ctx, in its own process
// group (killed with it when ctx ends), and returns its combined output.
func runBounded(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return buf.Bytes(), err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return buf.Bytes(), fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
}
