module github.com/oncemq/oncemq

go 1.26.8

require (
	github.com/eclipse/paho.golang v0.23.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/mochi-mqtt/server/v2 v2.7.9 // indirect
	github.com/rs/xid v1.4.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
