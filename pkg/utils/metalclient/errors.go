package metalclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/metal-stack/metal-lib/httperrors"
)

// answer is what every error response of metal-go's generated client is: a
// status code and the metal-api's error body.
type answer interface {
	error
	Code() int
	GetPayload() *httperrors.HTTPErrorResponse
}

// Error is an error the metal-api answered with.
type Error struct {
	// Op is what was asked, e.g. "allocating a firewall".
	Op string
	// StatusCode is the HTTP status the metal-api answered with.
	StatusCode int
	// Message is the metal-api's message.
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: the metal-api answered %d %s: %s", e.Op, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Wrap turns what metal-go returned into an *Error when the metal-api
// answered, and into an error naming op otherwise (timeout, no connection,
// an answer that is no metal-api error body).
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var a answer
	if errors.As(err, &a) {
		msg := "(no message)"
		if p := a.GetPayload(); p != nil {
			msg = p.Message
		}
		return &Error{Op: op, StatusCode: a.Code(), Message: msg}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// StatusCode is the status the metal-api answered with, 0 when it did not
// answer (or not as the metal-api does).
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// Definite tells whether err is the metal-api's refusal (a 4xx answer): the
// request was not carried out. Anything else (no answer, a timeout, a 5xx)
// may have been carried out.
func Definite(err error) bool {
	code := StatusCode(err)
	return code >= 400 && code < 500
}
