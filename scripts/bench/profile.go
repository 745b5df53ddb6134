package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
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
	if b.profDir == "" || t != tSidecar || s == nil || s.pprofURL == "" {
		return func() {}
	}
	return b.profile(s.pprofURL, name, profileName(name), maxDur)
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
