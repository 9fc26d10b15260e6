// labprobe sends and counts UDP probes for the lab (test/lab), in the lab
// machine's namespaces: it is copied into the lab as a static binary.
//
//	labprobe send ADDR INTERVAL   sends a sequence number to ADDR every INTERVAL until killed
//	labprobe count ADDR FILE      counts what arrives on ADDR and keeps the count in FILE
//	labprobe dial ADDR TIMEOUT    opens a TCP connection: prints connected, dropped (no answer) or refused
//	labprobe echo ADDR -          serves TCP echo on ADDR
//	labprobe resolve SERVER NAME  asks SERVER (UDP) for NAME's addresses and prints them, one a line
//	labprobe keep ADDR FILE       keeps one TCP connection to an echo server, one echo a second, and
//	                              keeps "<echoes> <error>" in FILE; it never reconnects
//	labprobe stream-send ADDR RATE  sends RATE numbered packets a second to ADDR over 16 flows
//	labprobe stream-recv ADDR FILE  receives such a stream and keeps its report (JSON) in FILE
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/lab/stream"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: labprobe send ADDR INTERVAL | count ADDR FILE | dial ADDR TIMEOUT | echo ADDR - | resolve SERVER NAME | keep ADDR FILE | stream-send ADDR RATE | stream-recv ADDR FILE")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2], os.Args[3])
	case "count":
		err = count(os.Args[2], os.Args[3])
	case "dial":
		err = dial(os.Args[2], os.Args[3])
	case "echo":
		err = echo(os.Args[2])
	case "keep":
		err = keep(os.Args[2], os.Args[3])
	case "stream-send":
		err = stream.Send(os.Args[2], os.Args[3])
	case "stream-recv":
		err = stream.Receive(os.Args[2], os.Args[3])
	case "resolve":
		err = resolve(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labprobe:", err)
		os.Exit(1)
	}
}

func send(addr, interval string) error {
	every, err := time.ParseDuration(interval)
	if err != nil {
		return err
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	buf := make([]byte, 8)
	for seq := uint64(1); ; seq++ {
		binary.BigEndian.PutUint64(buf, seq)
		// Unreachable for now is what a probe is for: errors are ignored.
		_, _ = c.Write(buf)
		time.Sleep(every)
	}
}

func count(addr, file string) error {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	if err := write(file, "0"); err != nil {
		return err
	}
	// The count is written at most every 100 ms: a write per packet through
	// the lab's share costs the emulated machine more than the packet.
	buf := make([]byte, 64)
	n, written := 0, 0
	for {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, _, err := c.ReadFrom(buf); err == nil {
			n++
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if n != written {
			if err := write(file, strconv.Itoa(n)); err != nil {
				return err
			}
			written = n
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// write replaces file with content, so a reader sees it whole.
func write(file, content string) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func dial(addr, timeout string) error {
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", addr, d)
	var ne net.Error
	switch {
	case err == nil:
		_ = c.Close()
		fmt.Println("connected")
	case errors.As(err, &ne) && ne.Timeout():
		fmt.Println("dropped")
	default:
		fmt.Println("refused:", err)
	}
	return nil
}

func resolve(server, name string) error {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		fmt.Println(a)
	}
	return nil
}

func echo(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer func() { _ = c.Close() }()
			_, _ = io.Copy(c, c)
		}()
	}
}

func keep(addr, file string) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return writeStatus(file, 0, err)
	}
	r := bufio.NewReader(c)
	for n := 0; ; n++ {
		if err := writeStatus(file, n, nil); err != nil {
			return err
		}
		time.Sleep(time.Second)
		line := fmt.Sprintf("echo %d\n", n)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, line); err != nil {
			return writeStatus(file, n, err)
		}
		got, err := r.ReadString('\n')
		if err == nil && got != line {
			err = fmt.Errorf("echoed %q for %q", got, line)
		}
		if err != nil {
			return writeStatus(file, n, err)
		}
	}
}

// writeStatus keeps "<echoes> <error>" in file.
func writeStatus(file string, n int, err error) error {
	status := strconv.Itoa(n)
	if err != nil {
		status += " " + err.Error()
	}
	return write(file, status)
}
