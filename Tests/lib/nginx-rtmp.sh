# Tests/lib/nginx-rtmp.sh — sourced by the suites and VM cases that run nginx with the RTMP module (Debian's
# libnginx-mod-rtmp) on loopback: nginx_conf_head DIR [CONNECTIONS] prints the top of its nginx.conf (the
# module, in the foreground, one process, its log and pid in DIR); the caller adds its rtmp and http blocks.
nginx_conf_head() {
    cat <<NGINX
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
daemon off;
master_process off;
worker_processes 1;
error_log $1/error.log warn;
pid $1/nginx.pid;
events { worker_connections ${2:-64}; }
NGINX
}
