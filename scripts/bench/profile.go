package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Profiles (-profile DIR): the sidecar starts with admin.pprof and the
// embedded Iggy server with --pprof-addr. Every sidecar run of the produce,
// consume and latency workloads saves, in DIR,
//
//	<run>.cpu.pprof         a CPU profile of the sidecar covering the run
//	<run>.allocs.pprof      the sidecar's allocation profile at the run's end
//	<run>.allocs-base.pprof the same at its start
//
// and every produce run on the Iggy path (the sidecar's and direct-go's)
// saves the same three files of the embedded Iggy server, named
// iggy-<target>-<run>.*, so that the server's cost per GB can be compared
// between the sidecar's batches and the direct client's.
//
// `go tool pprof -sample_index=alloc_space -base X.allocs-base.pprof
// X.allocs.pprof` shows what the run allocated. A CPU profile lasts a whole
// number of seconds fixed at the start (net/http/pprof cannot be stopped
// early), so the run's end waits for it: the next run never leaks into it.

// profileRun starts profiling the sidecar for the run named name, which
// lasts at most maxDur, and returns the function that ends it (call it once
// the run is over). It does nothing unless -profile is set and t is the
// sidecar.
func (b *bench) profileRun(t, name string, maxDur time.Duration) func() {
	s := b.targets[t]
	if b.profDir == "" || (t != tSidecar && t != tSidecarB) || s == nil || s.pprofURL == "" {
		return func() {}
	}
	file := profileName(name)
	if t == tSidecarB {
		file = "b-" + file // both builds of an A/B are profiled alike
	}
	return b.profile(s.pprofURL, name, file, maxDur)
}

// profileIggy starts profiling the embedded Iggy server for target t's run
// named name, as profileRun does for the sidecar. It does nothing unless
// -profile is set.
func (b *bench) profileIggy(t, name string, maxDur time.Duration) func() {
	if b.profDir == "" || b.embedded == nil || b.embedded.pprofURL == "" {
		return func() {}
	}
	return b.profile(b.embedded.pprofURL, "Iggy "+t+" "+name, "iggy-"+t+"-"+profileName(name), maxDur)
}

// profile saves the profiles of the server at pprofURL under DIR/file.*.
func (b *bench) profile(pprofURL, name, file string, maxDur time.Duration) func() {
	base := filepath.Join(b.profDir, file)
	if err := saveURL(b.ctx, pprofURL+"/allocs", base+".allocs-base.pprof"); err != nil {
		b.logf("profile %s: %v", name, err)
	}
	secs := int(math.Ceil(maxDur.Seconds())) + 1
	done := make(chan error, 1)
	go func() {
		done <- saveURL(b.ctx, fmt.Sprintf("%s/profile?seconds=%d", pprofURL, secs), base+".cpu.pprof")
	}()
	return func() {
		if err := saveURL(b.ctx, pprofURL+"/allocs", base+".allocs.pprof"); err != nil {
			b.logf("profile %s: %v", name, err)
		}
		if err := <-done; err != nil {
			b.logf("profile %s: %v", name, err)
			return
		}
		b.logf("profile %s saved in %s", name, base+".cpu.pprof")
	}
}

// profileName turns a run name into a file name.
func profileName(name string) string {
	r := strings.NewReplacer(" ", "-", "=", "", "/", "-")
	return r.Replace(name)
}

// saveURL writes the body of a GET of url to path.
func saveURL(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileSections are the CPU profiles the report summarises, in order:
// file stem (profileName of the run) and what it shows.
var profileSections = []struct{ stem, what string }{
	{"produce-acks1-none", "the sidecar, produce acks=1 none"},
	{"consume", "the sidecar, consume"},
	{"latency", "the sidecar, closed-loop latency"},
	{"iggy-sidecar-produce-acks1-none", "the embedded Iggy server behind the sidecar, produce acks=1 none"},
	{"iggy-direct-go-produce", "the embedded Iggy server under the direct Go client, produce"},
}

// profileTopN is how many functions each profile table lists.
const profileTopN = 8

// writeProfiles writes "Where the CPU goes": for each profile of
// profileSections the run saved, the functions with the most CPU of their
// own (`go tool pprof -top`), so the report carries the profile evidence
// next to the figures it explains.
func (b *bench) writeProfiles(p func(string, ...any)) {
	if b.profDir == "" {
		return
	}
	var found bool
	for _, sec := range profileSections {
		file := b.findProfile(sec.stem)
		if file == "" {
			continue
		}
		rows, total, err := pprofTop(b.ctxOrBackground(), file, profileTopN)
		if err != nil {
			b.note("profile %s: %v", filepath.Base(file), err)
			continue
		}
		if !found {
			p("## Where the CPU goes (pprof)\n\n")
			p("CPU profiles taken during the runs above (`go run ./scripts/bench -profile DIR` keeps them; a full run profiles into its work directory): the %d functions with the most CPU time of their own, as `go tool pprof -top` lists them. Syscalls are the socket reads and writes; memmove is copying.\n\n", profileTopN)
			found = true
		}
		p("**%s** (%s of samples)\n\n| flat | flat %% | cum %% | function |\n|---|---|---|---|\n", sec.what, total)
		for _, r := range rows {
			p("| %s | %s | %s | `%s` |\n", r[0], r[1], r[4], r[5])
		}
		p("\n")
	}
}

// findProfile returns the CPU profile whose name starts with stem, or "".
func (b *bench) findProfile(stem string) string {
	m, _ := filepath.Glob(filepath.Join(b.profDir, stem+".cpu.pprof"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// ctxOrBackground is the run's context while it lasts; the report is
// written after the budget may have ended it.
func (b *bench) ctxOrBackground() context.Context {
	if b.ctx != nil && b.ctx.Err() == nil {
		return b.ctx
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_ = cancel // released when the process ends; pprof runs are short
	return ctx
}

// pprofTop runs `go tool pprof -top` on file and returns its first n rows
// (flat, flat%, sum%, cum, cum%, function) and the total of samples.
func pprofTop(ctx context.Context, file string, n int) ([][6]string, string, error) {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n), file).Output()
	if err != nil {
		return nil, "", err
	}
	var rows [][6]string
	total := "?"
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "Total samples = "); i >= 0 {
			total = strings.Fields(line[i+len("Total samples = "):])[0]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") || !strings.HasSuffix(f[4], "%") {
			continue
		}
		rows = append(rows, [6]string{f[0], f[1], f[2], f[3], f[4], strings.Join(f[5:], " ")})
	}
	return rows, total, nil
}
