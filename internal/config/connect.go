package config

import (
	"context"

	"github.com/docker/docker/client"
	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/storage"
)

// Services are the clients every binary opens: Redis and the artifact store.
type Services struct {
	Redis *redis.Client
	Store *storage.Store
}

// Connect opens Redis and the artifact store and waits (up to a minute, as under
// compose they may still be starting) until the bucket is ready.
func (c Config) Connect(ctx context.Context) (*Services, error) {
	rdb, err := c.Redis()
	if err != nil {
		return nil, err
	}
	store, err := storage.New(c.Storage())
	if err == nil {
		err = WaitFor(ctx, "storage", store.Init)
	}
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &Services{Redis: rdb, Store: store}, nil
}

// Close closes what Connect opened.
func (s *Services) Close() { s.Redis.Close() }

// Docker returns a client of the local Docker engine (DOCKER_HOST and friends apply).
func Docker() (*client.Client, error) {
	return client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
}
