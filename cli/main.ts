/**
 * The magpie command line: start the platform, call functions, read objects.
 * Each command parses its own options strictly (node:util parseArgs: no
 * dependency, and the CLI starts in half a second): an unknown command or
 * option prints the usage and exits 2; `--help` (or `-h`) and `--version`
 * exit 0. Every `start` option also reads `MAGPIE_<OPTION>` from the
 * environment (`--object-store-memory` from MAGPIE_OBJECT_STORE_MEMORY).
 */
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { packageVersion } from '../node/version.ts'
import { runGet, runInvoke, runLogs } from './client-commands.ts'
import { runDeploy } from './deploy.ts'
import { runMemory, runStatus, runTimeline } from './inspect.ts'
import { runMap } from './map.ts'
import { runNew } from './new.ts'
import { runSecret } from './secret.ts'
import { runStart } from './start.ts'

type Options = NonNullable<ParseArgsConfig['options']>
type Values = Record<string, string | boolean | undefined>

interface Command {
  /** One line for the command list. */
  summary: string
  /** The command's own help. */
  usage: string
  options: Options
  run(values: Values, positionals: string[]): Promise<number>
}

const CLIENT: Options = {
  url: { type: 'string' },
  token: { type: 'string' },
}
const CLIENT_USAGE =
  'client options: --url URL (default $MAGPIE_URL or http://127.0.0.1:8080), --token T ($MAGPIE_TOKEN)'

const url = (v: Values) => (v.url as string | undefined) ?? process.env.MAGPIE_URL ?? 'http://127.0.0.1:8080'
const token = (v: Values) => (v.token as string | undefined) ?? process.env.MAGPIE_TOKEN
const adminToken = (v: Values) =>
  (v['admin-token'] as string | undefined) ?? process.env.MAGPIE_ADMIN_TOKEN ?? token(v)

const string = { type: 'string' } as const
const flag = { type: 'boolean' } as const

/** The options of `magpie start`; each also reads MAGPIE_<NAME> (see envFor). */
const START: Options = {
  port: string,
  host: string,
  cpus: string,
  functions: string,
  token: string,
  head: flag,
  join: string,
  nodes: string,
  secret: string,
  'secret-file': string,
  'advertise-url': string,
  resources: string,
  state: string,
  'object-store-memory': string,
  'spill-limit': string,
  'max-call-time': string,
  'worker-memory': string,
  'max-call-output': string,
  'actor-threads': string,
  'log-retention': string,
  'log-level': string,
  'max-body': string,
  'metrics-public': flag,
  cors: { type: 'string', multiple: true },
  'max-queued': string,
  'max-queued-bytes': string,
  watch: flag,
  'admin-token': string,
  'keep-versions': string,
  'max-bundle': string,
  'stop-grace': string,
}

/** The environment variable an option of `start` reads (the cluster secret keeps its own name). */
export function envFor(option: string): string {
  if (option === 'secret') return 'MAGPIE_CLUSTER_SECRET'
  return `MAGPIE_${option.toUpperCase().replaceAll('-', '_')}`
}

/** `--cors` as given (repeated, or commas in MAGPIE_CORS): the origins, each checked. */
function corsOrigins(raw: string | boolean | string[] | undefined): string[] | undefined {
  if (raw === undefined || typeof raw === 'boolean') return undefined
  const origins = (Array.isArray(raw) ? raw : [raw]).flatMap((o) => o.split(',')).map((o) => o.trim())
  for (const origin of origins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new UsageError(`--cors takes origins such as https://app.example.com (or *): ${origin}`)
    }
  }
  return origins
}

/** Options not given on the command line, from the environment. */
function withEnvironment(values: Values, options: Options): Values {
  const out: Values = { ...values }
  for (const [name, option] of Object.entries(options)) {
    if (out[name] !== undefined) continue
    const raw = process.env[envFor(name)]
    if (raw === undefined || raw === '') continue
    if (option.type === 'boolean') {
      if (!/^(1|true|0|false)$/.test(raw)) throw new UsageError(`${envFor(name)} must be 1, true, 0 or false`)
      out[name] = raw === '1' || raw === 'true'
    } else out[name] = raw
  }
  return out
}

const START_USAGE = `usage: magpie start [options]

  magpie start [--port 8080] [--host 127.0.0.1] [--cpus N] [--functions ./functions] [--token T]
        a gateway and one node serving a folder of functions
  magpie start --head [--state DIR or redis://HOST:PORT] [--secret-file F]
        a gateway alone, for nodes to join; writes the join command, with the cluster secret,
        to DIR/join-command (mode 0600); keeps its secret, functions, calls in flight and results
        in the state (--nodes too), and serves them again when started again on it
  magpie start --join URL [--cpus N] [--resources '{"gpu":1}'] [--secret-file F]
        a node joining the head at URL, retrying until it answers
        (secret: --secret-file, --secret, $MAGPIE_SECRET_FILE or $MAGPIE_CLUSTER_SECRET)
  magpie start --nodes N [--cpus N]
        a gateway and N local node processes

  cluster (--head, --join): --advertise-url URL  the URL others use to reach this process
        (needed behind NAT; never 0.0.0.0)
  object store (start, --join, --nodes): --object-store-memory 30%  memory for object values
        (bytes, 64MiB, 2GB or a share of RAM; default: 30% of the machine's, or of the
        container's limit); --state DIR  where values spill to disk (default a temporary
        folder); --spill-limit SIZE  disk for them
  calls (start, --join, --nodes): --max-call-time S  the longest any call may run, in seconds;
        --worker-memory 512MiB  the most heap one worker thread may use; --max-call-output 1MiB
        what one call may write to stdout and stderr; --actor-threads N  threads for actors
        (default 4 per CPU), then shared; --log-retention 64MiB,1h  what calls wrote, kept per
        node for their logs
  logging: --log-level info  the platform's log on stderr (JSON unless a terminal): a line per
        request (info), warnings (warn)
  gateway (start, --head, --nodes): --max-body 64MiB  largest request body; --metrics-public
        /metrics without the token; --cors ORIGIN (again for more, or * for any)  pages of
        those origins may call the API (MAGPIE_CORS: origins separated by commas); --max-queued N, --max-queued-bytes SIZE  calls (and bytes of
        their arguments) that may wait before new ones get 429 (default from memory)
  functions (start, --head, --nodes): --watch  deploy a saved folder again at once;
        --admin-token T  what deploys need; --keep-versions 5  versions kept;
        --max-bundle 16MiB  largest bundle
  stopping: Ctrl-C or SIGTERM drains (running calls finish); a second one, or --stop-grace 60
        seconds, stops at once

  Every option also reads MAGPIE_<OPTION> from the environment: --object-store-memory from
  MAGPIE_OBJECT_STORE_MEMORY, --head from MAGPIE_HEAD=1; the cluster secret from
  MAGPIE_CLUSTER_SECRET. The command line wins.`

const COMMANDS: Record<string, Command> = {
  start: {
    summary: 'run the platform: a gateway and a node, a head, a node joining one, or a head and N nodes',
    usage: START_USAGE,
    options: START,
    run: (values) => {
      const v = withEnvironment(values, START)
      const s = (name: string) => v[name] as string | undefined
      return runStart({
        port: s('port'),
        host: s('host'),
        cpus: s('cpus'),
        functions: s('functions'),
        token: s('token') ?? process.env.MAGPIE_TOKEN,
        head: v.head === true,
        join: s('join'),
        nodes: s('nodes'),
        secret: s('secret'),
        resources: s('resources'),
        state: s('state'),
        watch: v.watch === true,
        objectStoreMemory: s('object-store-memory'),
        spillLimit: s('spill-limit'),
        maxBody: s('max-body'),
        secretFile: s('secret-file'),
        advertiseUrl: s('advertise-url'),
        metricsPublic: v['metrics-public'] === true,
        cors: corsOrigins(v.cors),
        maxCallTime: s('max-call-time'),
        workerMemory: s('worker-memory'),
        maxCallOutput: s('max-call-output'),
        actorThreads: s('actor-threads'),
        logRetention: s('log-retention'),
        logLevel: s('log-level'),
        maxQueued: s('max-queued'),
        maxQueuedBytes: s('max-queued-bytes'),
        stopGrace: s('stop-grace'),
        adminToken: s('admin-token'),
        keepVersions: s('keep-versions'),
        maxBundle: s('max-bundle'),
      })
    },
  },
  deploy: {
    summary: 'bundle function folders here and deploy them to a running platform',
    usage: `usage: magpie deploy PATH... [--url URL] [--admin-token T]

  Bundles each function folder (or each folder of them) and deploys it; prints name, version,
  and new or unchanged. Token: --admin-token, $MAGPIE_ADMIN_TOKEN, else --token or $MAGPIE_TOKEN.`,
    options: { ...CLIENT, 'admin-token': string },
    run: (v, p) => runDeploy(url(v), adminToken(v), p),
  },
  new: {
    summary: 'write a function folder (index.ts and a test) to start from',
    usage: 'usage: magpie new NAME [--actor] [--functions DIR]',
    options: { actor: flag, functions: string },
    run: (v, p) => runNew(p, v.actor === true, v.functions as string | undefined),
  },
  secret: {
    summary: 'secrets on the platform: set NAME (value from stdin), list (names only), rm NAME',
    usage: `usage: magpie secret set NAME | list | rm NAME [--url URL] [--admin-token T]

  A function reads the secrets its config.secrets grants with env().`,
    options: { ...CLIENT, 'admin-token': string },
    run: (v, p) => runSecret(url(v), adminToken(v), p),
  },
  invoke: {
    summary: 'call a function (JSON: an array of arguments); NAME@VERSION pins a version',
    usage: `usage: magpie invoke NAME [JSON] [--async]

  Prints the result (or, with --async, the call's id at once). ${CLIENT_USAGE}`,
    options: { ...CLIENT, async: flag },
    run: (v, p) => runInvoke(url(v), token(v), p, v.async === true),
  },
  map: {
    summary: 'call a function once per input file, results under a folder; run again, it resumes',
    usage: `usage: magpie map FUNCTION --inputs GLOB [--inputs GLOB...] --out DIR [--concurrency 64] [--bytes]

  Calls FUNCTION with { path, text } for each file the globs match (--bytes: its raw bytes),
  at most --concurrency at a time, and writes each result to DIR/<path>.json (.out for bytes).
  What is done is kept in DIR/.magpie-map.ndjson, keyed by path and content hash: run again,
  only new, changed and failed files run. A progress bar on stderr, a JSON summary on stdout;
  exit 1 if a file failed (each is listed with its error).
  ${CLIENT_USAGE}`,
    options: {
      ...CLIENT,
      inputs: { type: 'string', multiple: true },
      out: string,
      concurrency: string,
      bytes: flag,
    },
    run: (v, p) =>
      runMap(url(v), token(v), p[0], {
        inputs: (v.inputs as string[] | undefined) ?? [],
        out: (v.out as string | undefined) ?? '',
        concurrency: Number((v.concurrency as string | undefined) ?? 64),
        bytes: v.bytes === true,
      }),
  },
  get: {
    summary: 'read an object, waiting until it is ready',
    usage: `usage: magpie get ID\n\n  ${CLIENT_USAGE}`,
    options: CLIENT,
    run: (v, p) => runGet(url(v), token(v), p),
  },
  logs: {
    summary: 'what a call wrote (-f: and what it writes, until it settles)',
    usage: `usage: magpie logs ID [-f] [--children] [--timestamps]

  -f, --follow    go on with what it writes, until it settles
  --children      add the lines of the calls it made, each prefixed [id]
  --timestamps    prefix each line with the time it was written
  ${CLIENT_USAGE}`,
    options: { ...CLIENT, follow: { type: 'boolean', short: 'f' }, children: flag, timestamps: flag },
    run: (v, p) =>
      runLogs(url(v), token(v), p, {
        follow: v.follow === true,
        children: v.children === true,
        timestamps: v.timestamps === true,
      }),
  },
  status: {
    summary: 'the nodes, their queues and objects at a glance',
    usage: `usage: magpie status [--json]\n\n  ${CLIENT_USAGE}`,
    options: { ...CLIENT, json: flag },
    run: (v) => runStatus(url(v), token(v), v.json === true),
  },
  memory: {
    summary: 'the biggest objects: where they are and what holds them',
    usage: `usage: magpie memory [--limit 20] [--json]\n\n  ${CLIENT_USAGE}`,
    options: { ...CLIENT, limit: string, json: flag },
    run: (v) => runMemory(url(v), token(v), v.limit as string | undefined, v.json === true),
  },
  timeline: {
    summary: "the last calls in Chrome's trace format (open it in Perfetto)",
    usage: `usage: magpie timeline --out trace.json [--seconds 60]\n\n  ${CLIENT_USAGE}`,
    options: { ...CLIENT, out: string, seconds: string },
    run: (v) => runTimeline(url(v), token(v), v.out as string | undefined, v.seconds as string | undefined),
  },
}

const USAGE = `usage: magpie <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(10)}${c.summary}`)
  .join('\n')}

magpie <command> --help says more; magpie --version says which magpie this is.`

/** A command line that cannot be run: said with the usage, exit 2. */
class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv
  if (first === '--version' || first === '-v' || first === 'version') {
    console.log(packageVersion())
    return 0
  }
  if (first === undefined) {
    console.error(USAGE)
    return 2
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    const about = rest[0] === undefined ? undefined : COMMANDS[rest[0]]
    console.log(about ? about.usage : USAGE)
    return 0
  }
  const command = COMMANDS[first]
  if (!command) throw new UsageError(`unknown command: ${first}`)
  let parsed: { values: Values; positionals: string[] }
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
    }) as { values: Values; positionals: string[] }
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${command.usage}`)
  }
  if (parsed.values.help) {
    console.log(command.usage)
    return 0
  }
  return command.run(parsed.values, parsed.positionals)
}

// A reader of our output that went away (EPIPE) is no reason to crash, nor to stop stopping.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err
  })
}

const argv = process.argv.slice(2)
main(argv).then(
  (code) => {
    // A stopped platform ends now, even if a reader of its output stalled
    // (what is still queued for stdout would otherwise keep it alive).
    if (argv[0] === 'start') process.exit(code)
    if (code !== 0) process.exitCode = code
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`magpie: ${err.message}${err.message.includes('usage:') ? '' : `\n\n${USAGE}`}`)
      process.exitCode = 2
      return
    }
    console.error(`magpie: ${(err as Error).message}`)
    process.exitCode = 1
  },
)
