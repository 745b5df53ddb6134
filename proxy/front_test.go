package proxy

import (
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// TestFrontRefusesForeignConnections: behind a TLS front (WithFront) a
// connection the front does not know (a local process dialling the
// internal plaintext port) is closed at open, close_reason authentication;
// one the front registered (its port bound and registered before the
// connect, as proxy/tlsfront does) is served.
func TestFrontRefusesForeignConnections(t *testing.T) {
	var known sync.Map
	e := startEnvWith(t, nil, WithFront(func(remote string) (FrontInfo, bool) {
		_, ok := known.Load(remote)
		return FrontInfo{Remote: "192.0.2.7:4242", Principal: "app"}, ok
	}))
	foreign := dial(t, e.addr)
	defer foreign.Close()
	send(t, foreign, appendRequest(nil, 1, nil, apiVersionsReq(3)))
	expectClosed(t, foreign)

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var berr error
		_ = rc.Control(func(fd uintptr) {
			if berr = syscall.Bind(int(fd), &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); berr == nil {
				sa, _ := syscall.Getsockname(int(fd))
				known.Store("127.0.0.1:"+strconv.Itoa(sa.(*syscall.SockaddrInet4).Port), true)
			}
		})
		return berr
	}}
	c, err := d.Dial("tcp4", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send(t, c, appendRequest(nil, 2, nil, apiVersionsReq(3)))
	if corr, _ := readResponse(t, c); corr != 2 {
		t.Fatalf("correlation id %d, want 2", corr)
	}
	if n := e.metrics.closedCount(CloseAuthentication); n != 1 {
		t.Errorf("%d connections closed for authentication, want the foreign one", n)
	}
}
