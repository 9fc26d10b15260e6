package shootsource

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// LoadBalancers lists the shoot's Services of type LoadBalancer, in every
// namespace.
func (s *Source) LoadBalancers(ctx context.Context) ([]corev1.Service, error) {
	c, err := s.connect()
	if err != nil {
		return nil, err
	}
	list := &corev1.ServiceList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the shoot's Services: %w", err)
	}
	var out []corev1.Service
	for _, svc := range list.Items {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			out = append(out, svc)
		}
	}
	return out, nil
}
