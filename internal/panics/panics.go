// Package panics carries a panic from a goroutine a request handler
// started back to the handler's goroutine, where the front door recovers
// it (closes that connection, counts close_reason panic) instead of the
// process ending: nothing recovers a panic on another goroutine.
package panics

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Group runs the goroutines a handler starts. A panic in one of them
// would end the process (nothing recovers it on its own goroutine): it is
// recovered there and raised again by Wait on the handler's goroutine,
// where the front door recovers it, closes the request's connection and
// counts it (close_reason panic), like a panic in the handler itself.
type Group struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	first *Carried
}

// Carried is a panic carried over from a handler's goroutine, with
// the stack where it happened.
type Carried struct {
	value any
	stack []byte
}

func (p *Carried) Error() string {
	return fmt.Sprintf("panic in a handler goroutine: %v\n%s", p.value, p.stack)
}

// Go runs fn on a new goroutine of the group.
func (g *Group) Go(fn func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() {
			if v := recover(); v != nil {
				g.mu.Lock()
				if g.first == nil {
					g.first = &Carried{value: v, stack: debug.Stack()}
				}
				g.mu.Unlock()
			}
		}()
		fn()
	}()
}

// Wait waits for the group's goroutines and raises the first panic one
// of them met.
func (g *Group) Wait() {
	g.wg.Wait()
	if g.first != nil {
		panic(g.first)
	}
}
