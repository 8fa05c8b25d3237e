package rabbitmq

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-acc
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// Writes from several goroutines arrive whole and, per goroutine, in order;
// Close sends what is still queued.
func TestCoalescingConnKeepsEveryWriteInOrder(t *testing.T) {
	client, server := tcpPair(t)
	w := coalesceWrites(client)
	const writers, each = 4, 5000
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(server)
		got <- b
	}()
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := fmt.Fprintf(w, "<%d:%d>", g, i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := <-got
	next := make([]int, writers)
	n := 0
	for _, rec := range bytes.Split(bytes.Trim(b, "<>"), []byte("><")) {
		var g, i int
		if _, err := fmt.Sscanf(string(rec), "%d:%d", &g, &i); err != nil {
			t.Fatalf("record %q is not whole: %v", rec, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: record %d arrived where %d was due", g, i, next[g])
		}
		next[g]++
		n++
	}
	if n != writers*each {
		t.Fatalf("%d records arrived, want %d", n, writers*each)
	}
}

// Reads go through the read-ahead buffer unchanged.
func TestCoalescingConnReads(t *testing.T) {
	client, server := tcpPair(t)
	w := coalesceWrites(client)
	want := bytes.Repeat([]byte("0123456789"), 20000)
	go func() { server.Write(want); server.Close() }()
	b, err := io.ReadAll(w)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("read %d bytes (%v), want %d", len(b), err, len(want))
	}
}

// A failed send fails the writes after it and closes the socket, so the
// reader sees the connection end rather than waiting on it.
func TestCoalescingConnFailsAfterASendError(t *testing.T) {
	client, server := tcpPair(t)
	w := coalesceWrites(client)
	server.Close()
	// Writing to a peer that closed soon fails (a reset); every write
	// after that failure must fail too.
	deadline := time.Now().Add(time.Minute)
	var err error
	for err == nil && time.Now().Before(deadline) {
		_, err = w.Write(bytes.Repeat([]byte("x"), 64<<10))
		time.Sleep(time.Millisecond)
	}
	if err == nil {
		t.Fatal("writes to a closed peer never failed")
	}
	if _, err2 := w.Write([]byte("more")); err2 == nil {
		t.Fatal("a write after a failed send succeeded")
	}
	if _, rerr := w.Read(make([]byte, 10)); rerr == nil {
		t.Fatal("the socket is still readable after a failed send")
	}
}
