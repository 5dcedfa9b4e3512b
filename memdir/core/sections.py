"""The sections of memdir's configuration: one model per part of the system.

Each field is declared once, here, under the part it configures (``settings.search.bm25_weight``,
``settings.threads.strategy``). A field's *setting name* is its alias: the one flat name the
environment (``MEMDIR_<NAME>``), the TOML files and the command line know it by
(``bm25_weight``, ``thread_strategy``), unchanged by the sections. `memdir.core.settings`
reads those names from every source and files each value under its section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, SecretStr, field_validator

from memdir.core.locations import AGENT_NAME, APP_NAME, HOOK_SOCKET_TIMEOUT, default_root

Mode = Literal["assistant", "retrieval", "researcher"]


def _sums_to_one(value: tuple[float, ...]) -> tuple[float, ...]:
    """A recalibration's and a role's weights make a weighted mean, so the result stays in range."""
    if any(weight < 0 for weight in value) or abs(sum(value) - 1.0) > 1e-6:
        raise ValueError(f"the four weights must be non-negative and sum to 1, not {value}")
    return value


Weights = Annotated[tuple[float, float, float, float], AfterValidator(_sums_to_one)]


def _setting(default: Any, name: str, swarm: str | None = None, **kwargs: Any) -> Any:
    """A field known outside as ``name`` (and, with ``swarm``, also as ``SWARM_MEMORY_<swarm>`` in the environment).

    A function as ``default`` is called for each new section (``Path.cwd``: the directory the
    process is in then, not the one it was in when this module was imported).
    """
    extra: dict[str, JsonValue] | None = {"swarm": f"SWARM_MEMORY_{swarm}"} if swarm else None
    if callable(default):
        return Field(default_factory=default, alias=name, json_schema_extra=extra, **kwargs)
    return Field(default, alias=name, json_schema_extra=extra, **kwargs)


class Section(BaseModel):
    """One part of the configuration; built by field name or by setting name."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class StorageSettings(Section):
    """Where entries live and the limits a store keeps."""

    root: Path = _setting(default_root(), "root", description="The memory root directory.")
    cache_dir: Path = _setting(Path(platformdirs.user_cache_dir(APP_NAME)), "cache_dir")
    store: str = _setting(
        "", "store",
        description="Where entries live: empty for the directory at the root, or a postgresql:// URL (one database for many servers).",
    )
    hnsw_ef_search: int = _setting(
        300, "hnsw_ef_search",
        description="PostgreSQL store: candidates pgvector's HNSW scan keeps per search up to 100K entries, growing with the square root of the size beyond (more: better recall, slower).",
    )
    hnsw_ef_search_duplicates: int = _setting(
        40, "hnsw_ef_search_duplicates",
        description="PostgreSQL store: the same when a write looks for near-duplicates of the entry it stored (entries that close are found with a short list).",
    )
    max_entry_size: int = _setting(3_000_000, "max_entry_size", description="Bytes per entry (SwarmMemory: 3 MB).")
    max_total_size: int = _setting(100_000_000_000, "max_total_size", description="Bytes in the whole root.")
    max_redirect_hops: int = _setting(5, "max_redirect_hops")
    lock_timeout: float = _setting(30.0, "lock_timeout", description="Seconds to wait for the root's write lock.")
    min_free_disk: int = _setting(
        1 << 20, "min_free_disk",
        description="Bytes a write must leave free on the root's disk, so a full disk can still be cleaned up (0 = off).",
    )
    index_wal_limit: int = _setting(
        4 << 20, "index_wal_limit", description="Bytes the derived index's write-ahead log is checkpointed and truncated at.",
    )
    audit_diff_chars: int = _setting(2000, "audit_diff_chars", description="Longest diff one audit record keeps.")


class RolesSettings(Section):
    """Who is acting, and what each role sees and weighs."""

    @field_validator("agent")
    @classmethod
    def _agent_is_a_plain_name(cls, value: str | None) -> str | None:
        """An agent name becomes a folder: refuse anything that could leave the root."""
        if value is not None and not AGENT_NAME.fullmatch(value):
            raise ValueError(
                f"agent name {value!r} is not allowed: use letters, digits, '-', '_' or '.', not starting with '.'"
            )
        return value

    agent: str | None = _setting(
        None, "agent",
        description="Who is acting (owner of what it writes); alone, also its own store <root>/agents/<agent>.",
    )
    role: Literal["orchestrator", "optimizer", "reviewer", "executor"] | None = _setting(
        None, "role", description="The agent's role: its view of kinds; with a role the agent shares the root.",
    )
    shared_store: bool = _setting(False, "shared_store", description="True: an agent without a role uses the shared root too.")
    admin: bool = _setting(
        False, "admin",
        description="May change and delete every agent's entries. memdir.toml or --admin only, never the environment.",
    )
    role_importance_weight: float = _setting(
        0.05, "role_importance_weight", description="With a role: weight of the role's importance (its weights below) instead.")
    role_weights_orchestrator: Weights = _setting(
        (0.3, 0.2, 0.4, 0.1), "role_weights_orchestrator", description="An orchestrator's weights of base importance, reads, recency and kind relevance.")
    role_weights_optimizer: Weights = _setting(
        (0.4, 0.3, 0.1, 0.2), "role_weights_optimizer", description="An optimizer's weights (base, reads, recency, relevance).")
    role_weights_reviewer: Weights = _setting(
        (0.5, 0.1, 0.2, 0.2), "role_weights_reviewer", description="A reviewer's weights (base, reads, recency, relevance).")
    role_weights_executor: Weights = _setting(
        (0.2, 0.4, 0.3, 0.1), "role_weights_executor", description="An executor's weights (base, reads, recency, relevance).")


class EmbeddingsSettings(Section):
    """The embedding model, local or remote."""

    model: str = _setting("sentence-transformers/all-MiniLM-L6-v2", "model", "EMBEDDING_MODEL")
    model_dir: Path | None = _setting(None, "model_dir", description="Explicit model directory (first in resolution order).")
    max_chars: int = _setting(1200, "embedding_max_chars", "EMBEDDING_MAX_CHARS", description="-1 = unlimited")
    summary: Literal["first_paragraph", "content"] = _setting(
        "content", "embedding_summary",
        description="What of the content is embedded: its first paragraph (SwarmMemory) or all of it up to embedding_max_chars.",
    )
    batch_size: int = _setting(32, "embed_batch_size")
    threads: int | None = _setting(None, "embed_threads")
    batches_at_once: int = _setting(
        2, "embed_batches_at_once", ge=1,
        description="Batches of waiting writes' texts the model embeds at the same time (more keeps more cores busy).",
    )
    enabled: bool = _setting(True, "embeddings_enabled", description="False: keyword search only.")
    url: str | None = _setting(
        None, "embedding_url",
        description="An OpenAI-compatible embeddings service (http://localhost:11434 for Ollama) to use instead of the local model; its model is `model`.",
    )
    api_key: SecretStr | None = _setting(
        None, "embedding_api_key", description="The embedding service's API key (sent as a bearer token, never stored).",
    )
    timeout: float = _setting(30.0, "embedding_timeout", gt=0, description="Seconds per request to the embedding service.")
    backoff: float = _setting(
        0.5, "embedding_backoff", ge=0, description="Seconds before the first retry of a failed embedding request (doubled each time, 3 retries).",
    )
    search_model_wait: float = _setting(
        3.0, "search_model_wait", ge=0.0,
        description="Seconds a search arriving while the model loads waits for it before searching by keywords only.",
    )
    model_download: bool = _setting(
        True, "model_download",
        description="Download the model from the Hugging Face hub when no local copy exists (never when HF_HUB_OFFLINE is set).",
    )


class SearchSettings(Section):
    """How a search ranks entries."""

    semantic_weight: float = _setting(0.5, "semantic_weight", "SEMANTIC_WEIGHT")
    keyword_weight: float = _setting(0.1, "keyword_weight", "KEYWORD_WEIGHT", description="Weight of the share of query keywords found in the entry (tuned on LoCoMo).")
    relevance_semantic_weight: float = _setting(
        0.5, "relevance_semantic_weight",
        description="Share of the cosine in a result's absolute relevance (the rest: idf-weighted keyword share); what discovery thresholds.",
    )
    fusion: Literal["weighted", "rrf"] = _setting("weighted", "fusion", description="How hybrid search fuses its signals.")
    bm25_weight: float = _setting(0.1, "bm25_weight", description="Weight of BM25 (normalised by the query's best match).")
    tag_weight: float = _setting(0.4, "tag_weight", description="Weight of query keywords matching the entry's tags.")
    rrf_k: int = _setting(60, "rrf_k", description="Rank offset of reciprocal-rank fusion (fusion = 'rrf').")
    candidates: int = _setting(50, "search_candidates", description="Candidates per signal before fusion.")
    keyword_idf: bool = _setting(True, "keyword_idf", description="Weight keyword coverage by each term's idf in the store.")
    context_weight: float = _setting(
        0.11, "context_weight",
        description="Weight of context coverage: query keywords an entry lacks that entries written next to it in its folder hold (0 = off).",
    )
    context_window: int = _setting(
        3, "context_window",
        description="Entries on each side, in the order written within a folder, that context coverage looks at.", ge=0,
    )
    max_top_k: int = _setting(50, "search_max_top_k", description="Most results one MemorySearch returns.")
    bm25_column_weights: tuple[float, float, float, float] = _setting(
        (4.0, 3.0, 2.0, 1.0), "bm25_column_weights", description="BM25 weights of title, tags, domain, content."
    )
    graph_weight: float = _setting(
        0.0, "graph_weight", description="Weight of graph expansion: entries linked to the top hits, decayed by link strength."
    )
    graph_seeds: int = _setting(5, "graph_seeds", description="Top hits whose links graph expansion follows.")
    graph_hops: int = _setting(2, "graph_hops", description="Links graph expansion follows from a top hit (1-2).")
    graph_hop_decay: float = _setting(
        0.5, "graph_hop_decay", description="Factor per hop beyond the first in graph expansion (times each link's strength)."
    )
    importance_weight: float = _setting(0.0, "importance_weight", description="Weight of an entry's importance (1-10, default 5).")
    recency_weight: float = _setting(0.0, "recency_weight", description="Weight of recency: exp decay since last access.")
    recency_half_life_days: float = _setting(
        30.0, "recency_half_life_days", description="Days after which recency falls to half."
    )
    graph_max_nodes: int = _setting(50, "graph_max_nodes", description="Most entries one MemoryGraph answer shows.")
    sequence_link_strength: float = _setting(
        0.5, "sequence_link_strength", description="Strength of the system link from an entry to the one before it in a conversation."
    )
    duplicate_cosine: float = _setting(0.85, "duplicate_cosine", description="MemoryWrite: cosine to call an entry a near-duplicate.")
    duplicate_jaccard: float = _setting(0.6, "duplicate_jaccard", description="The same by word overlap, when there is no vector.")
    duplicates_shown: int = _setting(3, "duplicates_shown", description="Near-duplicates listed after a write.")


class LimitsSettings(Section):
    """What one tool call may ask for."""

    word_limit: int = _setting(250, "word_limit", description="MemoryWrite's word limit per entry.")
    glob_max_results: int = _setting(500, "glob_max_results")
    grep_max_results: int = _setting(500, "grep_max_results")
    grep_time_limit: float = _setting(
        2.0, "grep_time_limit", description="Seconds one grep may take (a runaway regular expression is stopped)."
    )
    regex_max_chars: int = _setting(10_000, "regex_max_chars", description="Characters in a grep's regular expression.")
    regex_max_repeat: int = _setting(1_000, "regex_max_repeat", description="Largest repetition count {m,n} in one.")
    regex_max_size: int = _setting(
        50_000, "regex_max_size", description="Its size with counted repeats written out (nested counts multiply)."
    )
    regex_max_depth: int = _setting(100, "regex_max_depth", description="How deeply its groups may nest.")
    grep_max_line_chars: int = _setting(
        200_000, "grep_max_line_chars",
        description="Longest line a pattern that repeats a group may search (its match takes memory per character).",
    )


class DiscoverySettings(Section):
    """The per-message reminders, and the prefetch cache that serves what they lead to."""

    threshold: float = _setting(0.35, "discovery_threshold", "DISCOVERY_THRESHOLD")
    threshold_short: float = _setting(
        0.25, "discovery_threshold_short", "DISCOVERY_THRESHOLD_SHORT",
        description="Relevance a discovery hit needs for a message of fewer than adaptive_word_cutoff words.",
    )
    adaptive_word_cutoff: int = _setting(10, "adaptive_word_cutoff", "ADAPTIVE_WORD_CUTOFF")
    top_k: int = _setting(
        10, "discovery_top_k", description="At most this many memories per reminder (a line each), as many as fit discovery_reminder_bytes.",
    )
    reminder_bytes: int = _setting(
        660, "discovery_reminder_bytes",
        description="Most bytes the memories' reminder takes: the weakest lines are left out until it fits (the best one stays); 0 = no limit.",
    )
    top_k_skills: int = _setting(4, "discovery_top_k_skills", description="At most this many skills per reminder.")
    token_budget: int = _setting(600, "discovery_token_budget")
    names_required: bool = _setting(
        True, "discovery_names_required",
        description="A message naming someone the store knows shows only entries that mention them; a name it never saw counts for nothing.",
    )
    rank_by: Literal["score", "relevance"] = _setting(
        "relevance", "discovery_rank_by",
        description="Which hits above the threshold a reminder shows first: the search's ranking (score) or the most relevant.",
    )
    min_score: float = _setting(0.2, "discovery_min_score", description="Relevance floor below any threshold.")
    min_content_words: int = _setting(
        3, "discovery_min_content_words",
        description="A message with fewer content words (thanks!, hello test) gets only entries whose title, tags or path name one of them (or, when it names someone the store knows, that hold all of them).",
    )
    prefetch_size: int = _setting(1000, "prefetch_size", description="Entries the prefetch cache holds (0 = no cache).")
    prefetch_recent: int = _setting(20, "prefetch_recent", description="Recent entries of the role's view prefetched at session start.")
    prefetch_important: int = _setting(10, "prefetch_important", description="Important entries of the role's view prefetched at session start.")
    prefetch_min_importance: float = _setting(8.0, "prefetch_min_importance", description="Importance an entry needs to be prefetched as important.")
    prefetch_phase: int = _setting(15, "prefetch_phase", description="Entries prefetched when a skill is loaded: the view's best matches for what it is about.")
    prefetch_search: int = _setting(10, "prefetch_search", description="Results of a MemorySearch prefetched, best first: an agent reads next from what it was shown (0 = none).")


class EpisodesSettings(Section):
    """Episode boundaries, recall ranking and the session-start reminder."""

    pause_minutes: float = _setting(5.0, "episode_pause_minutes", description="A longer gap starts a new episode.")
    topic_threshold: float = _setting(0.55, "episode_topic_threshold", description="Cosine distance between consecutive windows that is a topic shift (tuned on LoCoMo); 0 = off.")
    topic_window: int = _setting(4, "episode_topic_window", description="Messages per topic-shift window.")
    topic_min_messages: int = _setting(6, "episode_topic_min_messages", description="No topic cut in a shorter episode.")
    half_life_days: float = _setting(30.0, "episode_half_life_days", description="Recency decay of episode relevance.")
    recency_floor: float = _setting(0.5, "episode_recency_floor", description="Decay never takes relevance below this fraction.")
    importance_threshold: float = _setting(0.7, "episode_importance_threshold", description="Episodes this important get the boost.")
    importance_boost: float = _setting(0.1, "episode_importance_boost", description="Added to an important episode's relevance.")
    max_injected: int = _setting(3, "episode_max_injected", description="At most this many episodes per reminder.")
    session_start_budget: int = _setting(400, "episode_session_start_budget", description="Tokens of the session-start reminder.")


class ThreadsSettings(Section):
    """Working memory: compaction and context strategies."""

    strategy: Literal["virtual", "fragment", "semantic"] = _setting("virtual", "thread_strategy", description="Context strategy of a new thread.")
    compact_chunks: int = _setting(40, "thread_compact_chunks", description="Compact when this many compressible working-flow chunks wait (0 = never by count).")
    compact_tokens: int = _setting(8000, "thread_compact_tokens", description="... or when they hold this many tokens (0 = never by tokens).")
    compact_keep_recent: int = _setting(8, "thread_compact_keep_recent", description="The most recent chunks are never compacted.")
    summary_tokens: int = _setting(300, "thread_summary_tokens", description="Length of a compaction or page summary.")
    pin_importance: float = _setting(0.7, "thread_pin_importance", description="virtual: messages this important are never paged out.")
    page_chunks: int = _setting(8, "thread_page_chunks", description="virtual: chunks per page.")
    page_budget: float = _setting(0.3, "thread_page_budget", description="virtual: share of the budget for pages referenced back in.")
    lane_weights: tuple[float, float, float, float] = _setting(
        (8.0, 4.0, 3.0, 3.0), "thread_lane_weights", description="virtual: budget weights of the assistant, user, system and tool lanes (gro).")
    high_watermark: float = _setting(0.65, "thread_high_watermark", description="virtual: page out when the thread passes this share of the budget...")
    low_watermark: float = _setting(0.5, "thread_low_watermark", description="... down to this share for the recent messages.")
    lane_min_recent: int = _setting(2, "thread_lane_min_recent", description="virtual: recent messages each lane keeps.")
    fragment_rate: float = _setting(0.2, "thread_fragment_rate", description="fragment: share of older messages sampled.")
    fragment_age_exponent: float = _setting(1.5, "thread_fragment_age_exponent", description="fragment: how strongly sampling favours newer messages.")
    recent_share: float = _setting(0.25, "thread_recent_share", description="fragment and semantic: share of the budget for the most recent turns.")
    sampling_timeout: float = _setting(60.0, "thread_sampling_timeout", description="Seconds to wait for the client's model to summarise.")


class EvolutionSettings(Section):
    """The background jobs that recalibrate, decay, archive and consolidate."""

    @field_validator("link_decay_factors")
    @classmethod
    def _factors_weaken(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(not 0.0 <= factor <= 1.0 for factor in value):
            raise ValueError(f"link decay factors are between 0 and 1 (a link only weakens), not {value}")
        return value

    enabled: bool = _setting(True, "evolution_enabled", description="The server runs due evolution jobs while the store is idle.")
    idle_minutes: float = _setting(5.0, "evolution_idle_minutes", description="The store is idle after this long without a tool call.")
    check_seconds: float = _setting(60.0, "evolution_check_seconds", description="How often the scheduler looks for idleness and due jobs.")
    job_timeout: float = _setting(60.0, "evolution_job_timeout", description="Seconds one job run may take; it stops between items and goes on next time.")
    batch_size: int = _setting(2000, "evolution_batch_size", description="Most items (entries, links, clusters) one job run handles; the next run goes on from there.")
    importance_interval_days: float = _setting(7.0, "importance_interval_days", description="Days between importance recalibrations.")
    link_decay_interval_days: float = _setting(7.0, "link_decay_interval_days", description="Days between link-decay runs.")
    archival_interval_days: float = _setting(30.0, "archival_interval_days", description="Days between archival runs.")
    consolidation_interval_days: float = _setting(1.0, "consolidation_interval_days", description="Days between consolidation runs.")
    importance_weights: Weights = _setting(
        (0.3, 0.4, 0.2, 0.1), "importance_weights", description="Weights of base importance, access, recency and links in a recalibration.")
    importance_min_change: float = _setting(1.0, "importance_min_change", description="A recalibrated importance is stored only when it moved at least this much.")
    importance_access_range: tuple[float, float] = _setting(
        (3.0, 10.0), "importance_access_range", description="The access factor (10 x reads per day) is held to this range.")
    importance_recency_half_life_days: float = _setting(30.0, "importance_recency_half_life_days", description="The recency factor halves every so many days without a read.")
    link_decay_days: tuple[float, float, float] = _setting(
        (180.0, 90.0, 30.0), "link_decay_days", description="Days untraversed after which a link decays by the first, second or third factor (the third only for links older than link_decay_old_days).")
    link_decay_factors: tuple[float, float, float] = _setting((0.25, 0.5, 0.8), "link_decay_factors", description="The decay factors for those three cases.")
    link_decay_old_days: float = _setting(365.0, "link_decay_old_days", description="A link this old decays slightly once untraversed for the third period.")
    link_remove_below: float = _setting(0.1, "link_remove_below", description="A system link weaker than this is removed.")
    archival_unread_days: float = _setting(180.0, "archival_unread_days", description="An entry never read is archived after this many days.")
    archival_low_importance: tuple[float, float] = _setting(
        (3.0, 90.0), "archival_low_importance", description="(importance below, days unread): archived.")
    archival_very_low_importance: tuple[float, float] = _setting(
        (2.0, 30.0), "archival_very_low_importance", description="(importance below, days unread): archived.")
    archival_protected_importance: float = _setting(7.0, "archival_protected_importance", description="Entries at least this important are never archived.")
    consolidation_cosine: float = _setting(0.9, "consolidation_cosine", description="Cosine for two entries to be near-duplicates (an edge of the clustering graph).")
    consolidation_jaccard: float = _setting(0.5, "consolidation_jaccard", description="Word overlap (Jaccard) they need as well.")
    consolidation_neighbours: int = _setting(10, "consolidation_neighbours", description="Nearest neighbours per entry looked at when building the graph.")
    consolidation_supersede_cosine: float = _setting(0.95, "consolidation_supersede_cosine", description="Without the client's model, only entries this similar are superseded...")
    consolidation_supersede_jaccard: float = _setting(0.8, "consolidation_supersede_jaccard", description="... with at least this word overlap.")
    consolidation_max_gap_days: float = _setting(30.0, "consolidation_max_gap_days", description="Without the model, entries written further apart are kept (the later may be an evolution).")
    consolidation_sampling_timeout: float = _setting(60.0, "consolidation_sampling_timeout", description="Seconds to wait for the client's model to decide on one cluster.")


class ServerSettings(Section):
    """The MCP server, its HTTP transport, web view and workspace tools."""

    mode: Mode = _setting("assistant", "mode")
    workspace: Path = _setting(Path.cwd, "workspace", description="Directory the skill workspace tools act on.")
    allow_bash: bool = _setting(False, "allow_bash", description="Bash is off unless this is true.")
    bash_timeout: float = _setting(60.0, "bash_timeout")
    read_workers: int = _setting(4, "read_workers", description="Threads that run read-only memory tools.")
    write_workers: int = _setting(
        4, "write_workers",
        description="Threads that run the tools that change memory: different clients' changes run beside each other up to their commits, which the store takes one at a time.",
    )
    hook_socket: bool = _setting(True, "hook_socket", description="A running server answers the hooks over a local socket under <root>/.memdir/.")
    hook_socket_timeout: float = _setting(HOOK_SOCKET_TIMEOUT, "hook_socket_timeout", description="Seconds a hook waits for the server before answering on its own.")
    resources_page_size: int = _setting(
        500, "resources_page_size", description="Entries per page of the server's resources/list (a cursor asks for the next).",
    )
    http_host: str = _setting("127.0.0.1", "http_host", description="Address `memdir serve --http` listens on.")
    http_port: int = _setting(8765, "http_port", description="Port it listens on.")
    http_token: str | None = _setting(None, "http_token", description="A bearer token given directly (named 'settings'); else the token file's.")
    http_tokens_file: Path = _setting(
        Path(platformdirs.user_config_dir(APP_NAME)) / "http-tokens.json", "http_tokens_file",
        description="Named tokens, stored hashed (`memdir token create|list|revoke`).",
    )
    http_allowed_hosts: tuple[str, ...] = _setting(
        (), "http_allowed_hosts", description="Host headers accepted besides the loopback names and the address served on.",
    )
    http_allowed_origins: tuple[str, ...] = _setting(
        (), "http_allowed_origins", description="Origin headers accepted besides http(s)://<an accepted host>.",
    )
    http_header_timeout: float = _setting(
        10.0, "http_header_timeout", description="Seconds a connection may take to send a request's headers (then 408, closed).", gt=0,
    )
    http_body_timeout: float = _setting(
        30.0, "http_body_timeout", description="Seconds a request's body may pause between two pieces (then closed).", gt=0,
    )
    http_max_connections_per_client: int = _setting(
        100, "http_max_connections_per_client", description="Open connections one client address may have (more: 503).", ge=1,
    )
    http_session_idle_timeout: float = _setting(1800.0, "http_session_idle_timeout", description="Seconds an idle MCP session is kept.")
    http_shutdown_timeout: float = _setting(30.0, "http_shutdown_timeout", description="Seconds SIGTERM waits for requests in flight.")
    web_page_size: int = _setting(50, "web_page_size", description="Entries per page of the web view.")
    web_read_only: bool = _setting(
        False, "web_read_only",
        description="The web view only shows: no edit, delete, unarchive or defrag (`memdir serve --http --read-only`).",
    )
