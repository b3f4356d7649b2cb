//go:build tools

// Package tools pins the dependencies the packages are being built on.
package tools

import (
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/apache/rocketmq-client-go/v2"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/gin-gonic/gin"
	_ "github.com/glebarez/sqlite"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/nacos-group/nacos-sdk-go/v2/clients"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/redis/go-redis/v9"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "gorm.io/driver/mysql"
	_ "gorm.io/gorm"
)
