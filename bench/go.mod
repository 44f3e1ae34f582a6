module github.com/cronguard/cronguard/bench

go 1.25.0

replace github.com/cronguard/cronguard => ../

require (
	github.com/bsm/redislock v0.9.4
	github.com/cronguard/cronguard v0.0.0-00010101000000-000000000000
	github.com/go-redsync/redsync/v4 v4.17.0
	github.com/jonboulle/clockwork v0.5.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/redis/rueidis v1.0.79
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-co-op/gocron/v2 v2.21.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
