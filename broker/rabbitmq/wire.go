package rabbitmq

import (
	"bufio"
	"net"
	"sync"
	"time"
)

// coalescingConn reads through a large buffer, and gathers the writes of a
// connection and sends them to the socket from one goroutine, several at a
// time. amqp091 flushes after every
// publish; without this a redrive pays one write system call per message,
// and the broker one read per message. Writes that arrive while a send is
// under way go out together in the next one, so an idle connection adds
// no delay (the sender wakes at once) and a busy one sends tens of
// messages per system call.
//
// A Write returns once its bytes are queued. A failed send fails every
// later Write and closes the socket, so amqp091's reader sees the
// connection end: nothing written after a failure can be taken as sent, and
// publisher confirms (never a Write's result) decide what the broker has.
type coalescingConn struct {
	net.Conn
	// r reads ahead: amqp091 reads through a 4 KiB buffer, a few
	// deliveries per system call.
	r *bufio.Reader

	mu      sync.Mutex
	wake    *sync.Cond // the sender waits for bytes; writers for room
	pending []byte
	spare   []byte
	err     error
	closed  bool
	done    chan struct{}
}

// maxPending bounds the bytes queued and not yet sent: a writer waits
// beyond it, as it would on a full socket buffer.
const maxPending = 1 << 20

// coalesceWrites wraps c; the sender goroutine ends with Close.
func coalesceWrites(c net.Conn) net.Conn {
	w := &coalescingConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer), done: make(chan struct{})}
	w.wake = sync.NewCond(&w.mu)
	go w.send()
	return w
}

// readBuffer is how much is read from the socket at once.
const readBuffer = 64 << 10

// Read is only ever called by amqp091's reader goroutine.
func (w *coalescingConn) Read(p []byte) (int, error) { return w.r.Read(p) }

func (w *coalescingConn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closed && len(w.pending) > 0 && len(w.pending)+len(p) > maxPending {
		w.wake.Wait()
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, net.ErrClosed
	}
	w.pending = append(w.pending, p...)
	w.wake.Broadcast()
	return len(p), nil
}

// send writes what is pending, as one system call, until Close or an
// error.
func (w *coalescingConn) send() {
	defer close(w.done)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.pending) == 0 && !w.closed && w.err == nil {
			w.wake.Wait()
		}
		if w.err != nil || len(w.pending) == 0 {
			return
		}
		buf := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.mu.Unlock()
		_, err := w.Conn.Write(buf)
		w.mu.Lock()
		if cap(buf) <= 4*maxPending {
			w.spare = buf[:0]
		}
		if err != nil {
			w.err = err
			w.pending = nil
			w.wake.Broadcast()
			_ = w.Conn.Close()
			return
		}
		w.wake.Broadcast()
	}
}

// flushWait bounds how long Close waits for queued bytes (a connection.close
// frame among them) to go out.
const flushWait = 2 * time.Second

// Close sends what is queued (within flushWait), then closes the socket.
func (w *coalescingConn) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.wake.Broadcast()
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-time.After(flushWait):
	}
	return w.Conn.Close()
}
