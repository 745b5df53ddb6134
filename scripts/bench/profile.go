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

// Profiles of the sidecar (-profile DIR): the sidecar starts with
// admin.pprof, and every sidecar run of the produce, consume and latency
// workloads saves, in DIR,
//
//	<run>.cpu.pprof         a CPU profile covering the run
//	<run>.allocs.pprof      the allocation profile at the run's end
//	<run>.allocs-base.pprof the allocation profile at its start
//
// so `go tool pprof -sample_index=alloc_space -base X.allocs-base.pprof
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
	base := filepath.Join(b.profDir, profileName(name))
	if err := saveURL(b.ctx, s.pprofURL+"/allocs", base+".allocs-base.pprof"); err != nil {
		b.logf("profile %s: %v", name, err)
	}
	secs := int(math.Ceil(maxDur.Seconds())) + 1
	done := make(chan error, 1)
	go func() {
		done <- saveURL(b.ctx, fmt.Sprintf("%s/profile?seconds=%d", s.pprofURL, secs), base+".cpu.pprof")
	}()
	return func() {
		if err := saveURL(b.ctx, s.pprofURL+"/allocs", base+".allocs.pprof"); err != nil {
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
