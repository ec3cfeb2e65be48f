#![allow(dead_code)] // shared by several test binaries and a benchmark; each uses a part
//! Real SPARQL servers for the integration tests: started on a free loopback port with a
//! fixture loaded, stopped (by PID) when dropped. A missing server is a failure that says how to
//! install it, never a skipped test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Oxigraph {
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

fn oxigraph_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ONGRAPH_OXIGRAPH") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sparql-venv/bin/oxigraph");
    if venv.exists() {
        return venv;
    }
    panic!(
        "the Oxigraph SPARQL server is not installed: run `bash scripts/install-sparql-servers` \
         (python3 -m venv target/sparql-venv && target/sparql-venv/bin/pip install oxigraph==0.5.13), \
         or set ONGRAPH_OXIGRAPH to an oxigraph binary"
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Oxigraph {
    /// Loads `fixture` (N-Triples) into a fresh store and serves it read-only.
    pub fn start(fixture: &Path) -> Self {
        Self::start_with(fixture, None)
    }

    /// As `start`, applying a SPARQL Update to the store before serving it.
    pub fn start_with(fixture: &Path, update: Option<&str>) -> Self {
        let bin = oxigraph_binary();
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let status = Command::new(&bin)
            .args(["load", "--location"])
            .arg(&store)
            .arg("--file")
            .arg(fixture)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("oxigraph runs");
        assert!(status.success(), "oxigraph load {} failed", fixture.display());
        if let Some(update) = update {
            let out = Command::new(&bin)
                .args(["update", "--location"])
                .arg(&store)
                .args(["--update", update])
                .output()
                .unwrap();
            assert!(out.status.success(), "oxigraph update failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let port = free_port();
        let log = dir.path().join("serve.stderr");
        let mut child = Command::new(&bin)
            .args(["serve-read-only", "--location"])
            .arg(&store)
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("oxigraph serve starts");
        wait_listening(&format!("127.0.0.1:{port}"), &mut child, &log);
        Self { url: format!("http://127.0.0.1:{port}/query"), child, _dir: dir }
    }
}

impl Drop for Oxigraph {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An Oxigraph server that takes updates (`oxigraph serve`, for shared corrections), on an
/// empty store of its own. `stop` kills it by PID and `restart` serves the same store on the
/// same port again, so a test can take the server away in the middle of a user's work.
pub struct OxigraphRw {
    pub query: String,
    pub update: String,
    port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl OxigraphRw {
    pub fn start() -> Self {
        let port = free_port();
        let mut server = Self {
            query: format!("http://127.0.0.1:{port}/query"),
            update: format!("http://127.0.0.1:{port}/update"),
            port,
            child: None,
            dir: tempfile::tempdir().unwrap(),
        };
        server.restart();
        server
    }

    /// Serves the store (again) on the same port.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        let log = self.dir.path().join("serve.stderr");
        let mut child = Command::new(oxigraph_binary())
            .args(["serve", "--location"])
            .arg(self.dir.path().join("store"))
            .args(["--bind", &format!("127.0.0.1:{}", self.port)])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("oxigraph serve starts");
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_listening(&format!("127.0.0.1:{}", self.port), &mut child, &log)
        }));
        self.child = Some(child);
        if let Err(panic) = waited {
            std::panic::resume_unwind(panic);
        }
    }

    /// Kills the server (by its PID) and waits until it is gone; the store stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OxigraphRw {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Oxigraph listens only once its store is open, so an accepted connection means ready. A
/// server that exits meanwhile (its port taken, its store locked) fails at once, with what it
/// said on stderr (written to `log`), rather than after the 20 s wait.
pub fn wait_listening(addr: &str, child: &mut Child, log: &Path) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if let Ok(Some(status)) = child.try_wait() {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            panic!("the Oxigraph server for {addr} exited ({status}) before listening: {}", said.trim());
        }
        if std::net::TcpStream::connect(addr).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "the Oxigraph server at {addr} did not come up within 20 s: {}",
        std::fs::read_to_string(log).unwrap_or_default().trim()
    );
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// Virtuoso 7 (Debian's `virtuoso-opensource`), the server ToG itself used, with its own ini,
/// loopback ports and a temporary database.
pub struct Virtuoso {
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
    isql: PathBuf,
    sql_port: u16,
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file())
}

impl Virtuoso {
    pub fn start(fixture: &Path) -> Self {
        let (Some(server), Some(isql)) = (which("virtuoso-t"), which("isql-vt")) else {
            panic!(
                "Virtuoso is not installed: run `bash scripts/install-sparql-servers` as root, or \
                 `apt-get install -y --no-install-recommends virtuoso-opensource`"
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let (db, data) = (dir.path().join("db"), dir.path().join("data"));
        std::fs::create_dir_all(&db).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::copy(fixture, data.join("fixture.nt")).unwrap();
        let (sql_port, http_port) = (free_port(), free_port());
        let ini = dir.path().join("virtuoso.ini");
        let d = db.display();
        std::fs::write(
            &ini,
            format!(
                "[Database]\nDatabaseFile = {d}/virtuoso.db\nErrorLogFile = {d}/virtuoso.log\nLockFile = {d}/virtuoso.lck\n\
                 TransactionFile = {d}/virtuoso.trx\nxa_persistent_file = {d}/virtuoso.pxa\nFileExtend = 200\nStriping = 0\n\
                 TempStorage = TempDatabase\n[TempDatabase]\nDatabaseFile = {d}/virtuoso-temp.db\n\
                 TransactionFile = {d}/virtuoso-temp.trx\n[Parameters]\nServerPort = 127.0.0.1:{sql_port}\n\
                 DisableUnixSocket = 1\nDirsAllowed = ., {}\nNumberOfBuffers = 10000\nMaxDirtyBuffers = 6000\n\
                 CheckpointInterval = 0\n[HTTPServer]\nServerPort = 127.0.0.1:{http_port}\n\
                 ServerRoot = /var/lib/virtuoso-opensource-7/vsp\nServerThreads = 4\nMaxClientConnections = 4\n\
                 [SPARQL]\nResultSetMaxRows = 10000\nMaxQueryExecutionTime = 60\n",
                data.display()
            ),
        )
        .unwrap();
        let child = Command::new(server)
            .arg("+configfile")
            .arg(&ini)
            .arg("+foreground")
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("virtuoso-t starts");
        let server = Self {
            url: format!("http://127.0.0.1:{http_port}/sparql"),
            child,
            _dir: dir,
            isql: isql.clone(),
            sql_port,
        };
        let isql_run = |sql: &str| server.sql(sql);
        let started = Instant::now();
        while !isql_run("select 1;") {
            assert!(started.elapsed() < Duration::from_secs(60), "Virtuoso did not come up within 60 s");
            std::thread::sleep(Duration::from_millis(200));
        }
        let load = format!(
            "ld_dir('{}', '*.nt', 'http://ongraph.test/fixture'); rdf_loader_run(); checkpoint;",
            data.display()
        );
        assert!(isql_run(&load), "loading the fixture into Virtuoso failed");
        server
    }
}

impl Virtuoso {
    /// Runs SQL as dba; whether it succeeded.
    pub fn sql(&self, sql: &str) -> bool {
        Command::new(&self.isql)
            .args([&format!("127.0.0.1:{}", self.sql_port), "dba", "dba", &format!("exec={sql}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Lets the anonymous `SPARQL` user update the store through `/sparql` (a test server on
    /// loopback only: on a real one this makes every graph writable by anyone).
    pub fn writable(&self) {
        assert!(self.sql("grant SPARQL_UPDATE to \"SPARQL\";"), "granting SPARQL_UPDATE failed");
    }
}

impl Drop for Virtuoso {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
