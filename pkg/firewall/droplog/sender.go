package droplog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// EventsPath is where the receiver takes batches.
const EventsPath = "/v1/events"

// Sender sends the queue's events in batches: when BatchSize events wait,
// or every Interval. A batch that cannot be sent is not retried (the queue
// must stay bounded) but counted as lost, and the count goes with the next
// one.
type Sender struct {
	Queue    *Queue
	Firewall string
	// BatchSize is the most events per request.
	BatchSize int
	Interval  time.Duration
	// Endpoint returns the receiver's URL (…/v1/events).
	Endpoint func(ctx context.Context) (string, error)
	// Token returns the bearer token that proves the agent's identity.
	Token func(ctx context.Context) (string, error)
	// Client sends; NewHTTPClient(Verifier) verifies the receiver.
	Client *http.Client
	// Verifier, when set, is refreshed before each batch.
	Verifier *Verifier
	Recorder Recorder
	Log      *slog.Logger
}

// Run sends until ctx is done.
func (s *Sender) Run(ctx context.Context) {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.Queue.Ready():
			if s.Queue.Len() < s.BatchSize {
				continue
			}
		}
		for s.sendOne(ctx) {
		}
	}
}

// sendOne sends one batch; true when a full batch went out and more may
// wait.
func (s *Sender) sendOne(ctx context.Context) bool {
	events, lost := s.Queue.Take(s.BatchSize)
	if len(events) == 0 && lost == 0 {
		return false
	}
	err := s.send(ctx, Batch{Firewall: s.Firewall, Lost: lost, Events: events})
	if s.Recorder != nil {
		s.Recorder.Batch(err == nil, len(events))
	}
	if err != nil {
		s.Queue.Lose(lost + uint64(len(events)))
		if s.Recorder != nil {
			s.Recorder.Lost(LostSend, uint64(len(events)))
		}
		s.Log.Info("cannot send dropped packets to the shoot; they are counted as lost", "events", len(events), "error", err)
		return false
	}
	return len(events) == s.BatchSize
}

func (s *Sender) send(ctx context.Context, b Batch) error {
	if s.Verifier != nil {
		if err := s.Verifier.Refresh(ctx); err != nil {
			return err
		}
	}
	url, err := s.Endpoint(ctx)
	if err != nil {
		return fmt.Errorf("receiver: %w", err)
	}
	token, err := s.Token(ctx)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.Client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}
