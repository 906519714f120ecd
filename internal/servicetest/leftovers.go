package servicetest

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"sandboxd/runtime"
)

// Containers lists the containers, in any state, that carry the instance's
// label on the Docker daemon of the environment (DOCKER_HOST or the default
// socket), each as "<short id> <state>".
func Containers(ctx context.Context, instance string) ([]string, error) {
	return Labelled(ctx, runtime.LabelInstance, instance)
}

// Labelled lists the containers, in any state, labelled key=value, each as
// "<short id> <state>".
func Labelled(ctx context.Context, key, value string) ([]string, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", key+"="+value))})
	if err != nil {
		return nil, fmt.Errorf("listing the containers labelled %s=%s: %w", key, value, err)
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, fmt.Sprintf("%.12s %s", c.ID, c.State))
	}
	return ids, nil
}
