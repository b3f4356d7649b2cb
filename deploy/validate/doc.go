// Package validate checks the deployment files of seckill without a Docker engine, a cluster
// or the network: docker/compose.yaml through the compose-spec loader and its embedded schema,
// docker/Dockerfile's runtime stage, and every document of deploy/kubernetes decoded strictly
// into the Kubernetes API types (an unknown field is an error), plus the cross-references
// between them. It is a module of its own so the service's module does not depend on the
// compose and Kubernetes libraries; make test runs it.
package validate
