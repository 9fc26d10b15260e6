package lab

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// guestAgent speaks the QEMU guest agent's protocol (JSON lines over the
// virtio serial port, qemu-guest-agent from Debian in the lab machine): the
// lab runs every command in the machine with guest-exec.
type guestAgent struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

type qgaRequest struct {
	Execute   string `json:"execute"`
	Arguments any    `json:"arguments,omitempty"`
}

type qgaError struct {
	Class string `json:"class"`
	Desc  string `json:"desc"`
}

type qgaResponse struct {
	Return json.RawMessage `json:"return"`
	Error  *qgaError       `json:"error"`
}

// dialGuestAgent connects to the socket qemu serves the port on.
func dialGuestAgent(path string) (*guestAgent, error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	return &guestAgent{conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}, nil
}

func (g *guestAgent) close() error { return g.conn.Close() }

// call sends one command and decodes its answer into out.
func (g *guestAgent) call(ctx context.Context, cmd string, args, out any) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	_ = g.conn.SetDeadline(deadline)
	req, err := json.Marshal(qgaRequest{Execute: cmd, Arguments: args})
	if err != nil {
		return err
	}
	if _, err := g.conn.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("guest agent %s: %w", cmd, err)
	}
	line, err := g.r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("guest agent %s: %w", cmd, err)
	}
	var resp qgaResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("guest agent %s: %w", cmd, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("guest agent %s: %s: %s", cmd, resp.Error.Class, resp.Error.Desc)
	}
	if out != nil {
		return json.Unmarshal(resp.Return, out)
	}
	return nil
}

// sync makes sure no earlier answer is still in the stream: the agent
// echoes the id of guest-sync, and everything before it is discarded.
func (g *guestAgent) sync(ctx context.Context) error {
	id := time.Now().UnixNano() & 0x7fffffff
	g.mu.Lock()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = g.conn.SetDeadline(deadline)
	req, _ := json.Marshal(qgaRequest{Execute: "guest-sync", Arguments: map[string]any{"id": id}})
	_, err := g.conn.Write(append(req, '\n'))
	for err == nil {
		var line []byte
		if line, err = g.r.ReadBytes('\n'); err != nil {
			break
		}
		var resp struct {
			Return int64 `json:"return"`
		}
		if json.Unmarshal(line, &resp) == nil && resp.Return == id {
			break
		}
	}
	g.mu.Unlock()
	return err
}

// Result is what a command in the lab machine did.
type Result struct {
	ExitCode       int
	Stdout, Stderr string
}

// exec runs a shell command in the lab machine and waits for it.
func (g *guestAgent) exec(ctx context.Context, script string) (Result, error) {
	var started struct {
		PID int `json:"pid"`
	}
	if err := g.call(ctx, "guest-exec", map[string]any{"path": "/bin/sh", "arg": []string{"-c", script}, "capture-output": true}, &started); err != nil {
		return Result{}, err
	}
	for {
		var st struct {
			Exited   bool   `json:"exited"`
			ExitCode int    `json:"exitcode"`
			Signal   int    `json:"signal"`
			OutData  string `json:"out-data"`
			ErrData  string `json:"err-data"`
		}
		if err := g.call(ctx, "guest-exec-status", map[string]any{"pid": started.PID}, &st); err != nil {
			return Result{}, err
		}
		if st.Exited {
			out, _ := base64.StdEncoding.DecodeString(st.OutData)
			errOut, _ := base64.StdEncoding.DecodeString(st.ErrData)
			code := st.ExitCode
			if st.Signal != 0 {
				code = 128 + st.Signal
			}
			return Result{ExitCode: code, Stdout: string(out), Stderr: string(errOut)}, nil
		}
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("command in the lab machine: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
