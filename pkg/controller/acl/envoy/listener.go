package envoy

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

type listenerv3Filter = listenerv3.Filter

func newListenerFilter(name string, cfg proto.Message) (*listenerv3.Filter, error) {
	a, err := anypb.New(cfg)
	if err != nil {
		return nil, err
	}
	f := &listenerv3.Filter{Name: name, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}
