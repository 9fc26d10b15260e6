// labprobe sends and counts UDP probes for the lab (test/lab), in the lab
// machine's namespaces: it is copied into the lab as a static binary.
//
//	labprobe send ADDR INTERVAL   sends a sequence number to ADDR every INTERVAL until killed
//	labprobe count ADDR FILE      counts what arrives on ADDR and keeps the count in FILE
package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: labprobe send ADDR INTERVAL | labprobe count ADDR FILE")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2], os.Args[3])
	case "count":
		err = count(os.Args[2], os.Args[3])
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
	if err := write(file, 0); err != nil {
		return err
	}
	buf := make([]byte, 64)
	for n := 1; ; n++ {
		if _, _, err := c.ReadFrom(buf); err != nil {
			return err
		}
		if err := write(file, n); err != nil {
			return err
		}
	}
}

// write replaces file with the count, so a reader sees a whole number.
func write(file string, n int) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(n)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
