package droplog

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Bounds of a request to the receiver.
const (
	maxBody        = 8 << 20
	maxBatchEvents = 10000
	// reviewTTL is how long a token's review is trusted; the cache holds
	// at most maxReviews tokens.
	reviewTTL  = time.Minute
	maxReviews = 1000
)

// Receiver takes the agents' batches and prints one JSON line per event to
// Out, the container's log. Only tokens of AllowedUsers pass, as the shoot's
// API says in a TokenReview for its own audiences: an agent sends its shoot
// credential, which the shoot's admins can read anyway.
type Receiver struct {
	Client kubernetes.Interface
	// AllowedUsers are the user names (the agent's ServiceAccount) whose
	// batches are taken.
	AllowedUsers []string
	Out          io.Writer
	Log          *slog.Logger

	outMu    sync.Mutex
	reviewMu sync.Mutex
	reviewed map[[32]byte]time.Time
}

// line is one printed event: the event and the firewall that saw it.
type line struct {
	Firewall string `json:"firewall"`
	Event
}

// lossLine reports events that never arrived.
type lossLine struct {
	Firewall string `json:"firewall"`
	Lost     uint64 `json:"lost"`
	Message  string `json:"message"`
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != EventsPath {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		http.Error(w, "bearer token required", http.StatusUnauthorized)
		return
	}
	if err := r.authenticate(req.Context(), token); err != nil {
		r.Log.Info("refused a batch", "remote", req.RemoteAddr, "reason", err.Error())
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	var b Batch
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxBody))
	if err := dec.Decode(&b); err != nil {
		http.Error(w, "batch: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(b.Events) > maxBatchEvents {
		http.Error(w, fmt.Sprintf("batch: %d events, at most %d", len(b.Events), maxBatchEvents), http.StatusRequestEntityTooLarge)
		return
	}
	r.print(b)
	w.WriteHeader(http.StatusNoContent)
}

// print writes the batch's lines at once, so batches never interleave.
func (r *Receiver) print(b Batch) {
	firewall := sanitize(b.Firewall)
	var out []byte
	if b.Lost > 0 {
		l, _ := json.Marshal(lossLine{Firewall: firewall, Lost: b.Lost, Message: fmt.Sprintf("%d events lost", b.Lost)})
		out = append(append(out, l...), '\n')
	}
	for _, e := range b.Events {
		e.Context, e.Action = sanitize(e.Context), sanitize(e.Action)
		l, err := json.Marshal(line{Firewall: firewall, Event: e})
		if err != nil {
			continue
		}
		out = append(append(out, l...), '\n')
	}
	r.outMu.Lock()
	defer r.outMu.Unlock()
	_, _ = r.Out.Write(out)
}

// authenticate asks the shoot's API who the token is, remembering a
// positive answer for reviewTTL.
func (r *Receiver) authenticate(ctx context.Context, token string) error {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	r.reviewMu.Lock()
	until, ok := r.reviewed[key]
	r.reviewMu.Unlock()
	if ok && now.Before(until) {
		return nil
	}
	review, err := r.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token review: %w", err)
	}
	st := review.Status
	switch {
	case !st.Authenticated:
		return fmt.Errorf("token not authenticated: %s", st.Error)
	case !slices.Contains(r.AllowedUsers, st.User.Username):
		return fmt.Errorf("user %q is not allowed", st.User.Username)
	}
	r.reviewMu.Lock()
	defer r.reviewMu.Unlock()
	if r.reviewed == nil || len(r.reviewed) >= maxReviews {
		r.reviewed = map[[32]byte]time.Time{}
	}
	r.reviewed[key] = now.Add(reviewTTL)
	return nil
}
