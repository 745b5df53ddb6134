package panics

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestGroupCarriesPanicToWait: a panic on one of a handler's
// goroutines does not end the process; the others run to their end and
// Wait raises it on the handler's goroutine with the goroutine's stack.
func TestGroupCarriesPanicToWait(t *testing.T) {
	var g Group
	var ran atomic.Int32
	for i := 0; i < 4; i++ {
		g.Go(func() {
			if i == 2 {
				panic("send fault")
			}
			ran.Add(1)
		})
	}
	defer func() {
		v := recover()
		var gp *Carried
		if err, ok := v.(error); !ok || !errors.As(err, &gp) {
			t.Fatalf("Wait raised %v, want a *Carried", v)
		}
		if gp.value != "send fault" || !strings.Contains(gp.Error(), "panics_test.go") {
			t.Fatalf("panic %q, stack:\n%s", gp.value, gp.stack)
		}
		if ran.Load() != 3 {
			t.Fatalf("%d of the 3 other goroutines ran", ran.Load())
		}
	}()
	g.Wait()
	t.Fatal("Wait returned without raising the panic")
}

// TestGroupWithoutPanic: Wait returns once every goroutine is done.
func TestGroupWithoutPanic(t *testing.T) {
	var g Group
	var ran atomic.Int32
	for i := 0; i < 8; i++ {
		g.Go(func() { ran.Add(1) })
	}
	g.Wait()
	if ran.Load() != 8 {
		t.Fatalf("%d of 8 ran", ran.Load())
	}
}
