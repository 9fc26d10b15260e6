package credentials

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reviewWorkers bounds the SubjectAccessReviews in flight of one sweep or
// one boot identity's check.
const reviewWorkers = 8

// review sends one SubjectAccessReview per attribute for the user (none
// when empty) and groups, reviewWorkers at a time, and returns the allowed
// ones in the order asked. whose names them in an error.
func review(ctx context.Context, c client.Client, user string, groups []string, attrs []authorizationv1.ResourceAttributes, whose string) ([]string, error) {
	allowed := make([]bool, len(attrs))
	errs := make([]error, len(attrs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range reviewWorkers {
		wg.Go(func() {
			for i := range next {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user, Groups: groups, ResourceAttributes: attrs[i].DeepCopy(),
				}}
				if err := c.Create(ctx, sar); err != nil {
					errs[i] = fmt.Errorf("SubjectAccessReview for %s: %w", whose, err)
					continue
				}
				allowed[i] = sar.Status.Allowed
			}
		})
	}
	for i := range attrs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}
	var held []string
	for i, ok := range allowed {
		if ok {
			held = append(held, describe(attrs[i]))
		}
	}
	return held, nil
}

// firstError keeps a failed sweep's message bounded: one error, not one per
// review.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
