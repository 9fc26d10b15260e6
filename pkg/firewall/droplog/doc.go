// Package droplog brings the packets the ruleset logs (drops and, if
// configured, new accepted connections) from the kernel's NFLOG group to the
// receiver in the shoot: it decodes the packet headers, queues the events in
// a bounded queue that counts what it cannot hold, sends them in batches
// with an audience-bound token of the agent's shoot identity, and holds the
// receiver, which checks that token with a TokenReview and prints one JSON
// line per event.
package droplog
