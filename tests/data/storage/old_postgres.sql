--
-- PostgreSQL database dump
--

\restrict w91obsk7b03A1H8jYatx9KD06riYfEGBaMVwqCic8v518ZPqe1ustejpxyeOcbg

-- Dumped from database version 18.3
-- Dumped by pg_dump version 18.3

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET transaction_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: memgpt_lite_stem_0; Type: TEXT SEARCH DICTIONARY; Schema: public; Owner: -
--

CREATE TEXT SEARCH DICTIONARY public.memgpt_lite_stem_0 (
    TEMPLATE = pg_catalog.snowball,
    language = 'english' );


--
-- Name: memgpt_lite_search; Type: TEXT SEARCH CONFIGURATION; Schema: public; Owner: -
--

CREATE TEXT SEARCH CONFIGURATION public.memgpt_lite_search (
    PARSER = pg_catalog."default" );

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR asciiword WITH public.memgpt_lite_stem_0;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR word WITH public.memgpt_lite_stem_0;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR numword WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR email WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR url WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR host WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR sfloat WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR version WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR hword_numpart WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR hword_part WITH public.memgpt_lite_stem_0;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR hword_asciipart WITH public.memgpt_lite_stem_0;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR numhword WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR asciihword WITH public.memgpt_lite_stem_0;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR hword WITH public.memgpt_lite_stem_0;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR url_path WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR file WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR "float" WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR "int" WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.memgpt_lite_search
    ADD MAPPING FOR uint WITH simple;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: agent_blocks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.agent_blocks (
    agent_id text NOT NULL,
    block_id text NOT NULL,
    "position" integer NOT NULL
);


--
-- Name: agents; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.agents (
    id text NOT NULL,
    name text NOT NULL,
    llm text NOT NULL,
    system text NOT NULL,
    tool_names text DEFAULT '[]'::text NOT NULL,
    context_start bigint DEFAULT 0 NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    settings text DEFAULT '{}'::text NOT NULL,
    pressure_warned boolean DEFAULT false NOT NULL,
    embedding_model text,
    embedding_dimension integer,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    message_count bigint DEFAULT 0 NOT NULL,
    passage_count bigint DEFAULT 0 NOT NULL,
    vector_inserts bigint DEFAULT 0 NOT NULL,
    vector_deletes bigint DEFAULT 0 NOT NULL,
    last_active timestamp with time zone,
    memory_updated_at timestamp with time zone,
    message_tokens bigint DEFAULT 0 NOT NULL,
    passage_tokens bigint DEFAULT 0 NOT NULL,
    owner text DEFAULT 'local'::text NOT NULL,
    reflected_seq bigint DEFAULT 0 NOT NULL
);


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id text NOT NULL,
    "user" text NOT NULL,
    key_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone
);


--
-- Name: block_history; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.block_history (
    seq bigint NOT NULL,
    block_id text NOT NULL,
    label text NOT NULL,
    value text NOT NULL,
    author text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: block_history_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.block_history ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.block_history_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: blocks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.blocks (
    id text NOT NULL,
    label text NOT NULL,
    value text DEFAULT ''::text NOT NULL,
    char_limit bigint NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    read_only boolean DEFAULT false NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: memgpt_lite_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memgpt_lite_migrations (
    id integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: memgpt_lite_migrations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.memgpt_lite_migrations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.memgpt_lite_migrations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    seq bigint NOT NULL,
    id text NOT NULL,
    agent_id text NOT NULL,
    role text NOT NULL,
    content text,
    tool_calls text,
    tool_call_id text,
    name text,
    step_id text,
    created_at timestamp with time zone NOT NULL,
    search_text text,
    search_vector tsvector,
    search_length integer DEFAULT 0 NOT NULL
);


--
-- Name: messages_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.messages ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.messages_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: passages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.passages (
    seq bigint NOT NULL,
    id text NOT NULL,
    agent_id text NOT NULL,
    text text NOT NULL,
    context text DEFAULT ''::text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    text_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    search_vector tsvector NOT NULL,
    search_length integer DEFAULT 0 NOT NULL,
    superseded_by text,
    superseded_at timestamp with time zone
);


--
-- Name: passages_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.passages ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.passages_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.settings (
    key text NOT NULL,
    value text NOT NULL
);


--
-- Name: step_locks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.step_locks (
    agent_id text NOT NULL,
    holder text NOT NULL,
    pid integer NOT NULL,
    hostname text NOT NULL,
    host_id text NOT NULL,
    process_start text DEFAULT ''::text NOT NULL,
    acquired_at double precision NOT NULL,
    renewed_at double precision NOT NULL,
    expires_at double precision NOT NULL
);


--
-- Name: token_usage; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.token_usage (
    seq bigint NOT NULL,
    agent_id text NOT NULL,
    step_id text NOT NULL,
    model text NOT NULL,
    prompt_tokens bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    total_tokens bigint NOT NULL,
    requests bigint NOT NULL,
    estimated boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: token_usage_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.token_usage ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.token_usage_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: vectors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vectors (
    id bigint NOT NULL,
    agent_id text NOT NULL,
    owner text NOT NULL,
    item_seq bigint NOT NULL,
    dimension integer NOT NULL,
    vector bytea NOT NULL,
    CONSTRAINT vectors_owner_check CHECK ((owner = ANY (ARRAY['passage'::text, 'message'::text])))
);


--
-- Name: vectors_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.vectors ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.vectors_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Data for Name: agent_blocks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.agent_blocks VALUES ('agent-sam', 'block-persona', 0);
INSERT INTO public.agent_blocks VALUES ('agent-sam', 'block-human', 1);
INSERT INTO public.agent_blocks VALUES ('agent-kim', 'block-human', 0);


--
-- Data for Name: agents; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.agents VALUES ('agent-kim', 'old-kim', '{"model":"gpt-4o","base_url":null,"api_key":null,"tool_choice":"required","temperature":null,"max_retries":4,"timeout_seconds":null,"stream":true}', 's', '[]', 0, '', '{"context_window":null,"working_window":null,"reply_reserve_tokens":null,"warning_threshold":0.75,"compaction_threshold":0.9,"compaction_target":0.5,"max_chained_steps":10,"tool_result_max_chars":6000,"tool_set":"memgpt","embedder":null,"tool_rules":[],"reflect_every":null}', false, NULL, NULL, '2025-03-01 09:31:00+00', '2025-03-01 09:31:00+00', 0, 0, 0, 0, NULL, '2026-11-27 09:07:33.282062+00', 0, 0, 'kim', 0);
INSERT INTO public.agents VALUES ('agent-sam', 'old-sam', '{"model":"gpt-4o-mini","base_url":null,"api_key":null,"tool_choice":"required","temperature":null,"max_retries":4,"timeout_seconds":null,"stream":true}', 'You are Sam''s assistant.', '["send_message", "archival_memory_search"]', 0, 'Sam talked about tea.', '{"context_window":null,"working_window":null,"reply_reserve_tokens":null,"warning_threshold":0.75,"compaction_threshold":0.9,"compaction_target":0.5,"max_chained_steps":10,"tool_result_max_chars":6000,"tool_set":"memgpt","embedder":null,"tool_rules":[],"reflect_every":null}', false, 'fake', 4, '2025-03-01 09:30:00+00', '2026-11-27 09:07:33.292033+00', 3, 3, 4, 0, '2025-03-01 09:42:00+00', '2025-04-10 09:30:00+00', 6, 18, 'local', 0);


--
-- Data for Name: api_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.api_keys VALUES ('key-1', 'sam', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '2025-03-01 09:32:00+00', NULL);
INSERT INTO public.api_keys VALUES ('key-2', 'kim', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', '2025-03-01 09:33:00+00', '2026-11-27 09:07:33.365526+00');


--
-- Data for Name: block_history; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.block_history OVERRIDING SYSTEM VALUE VALUES (1, 'block-persona', 'persona', 'kind', 'create', '2025-03-01 09:30:00+00');
INSERT INTO public.block_history OVERRIDING SYSTEM VALUE VALUES (2, 'block-human', 'human', 'Sam, a painter', 'create', '2025-03-01 09:30:00+00');
INSERT INTO public.block_history OVERRIDING SYSTEM VALUE VALUES (3, 'block-human', 'human', 'Sam, a painter who moved to Lisbon', 'agent-sam', '2026-11-27 09:07:33.282062+00');


--
-- Data for Name: blocks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.blocks VALUES ('block-persona', 'persona', 'kind', 5000, '', false, '2025-03-01 09:30:00+00');
INSERT INTO public.blocks VALUES ('block-human', 'human', 'Sam, a painter who moved to Lisbon', 5000, '', false, '2026-11-27 09:07:33.282062+00');


--
-- Data for Name: memgpt_lite_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (1, 'm001_initial', '2026-11-27 09:07:32.869233+00');
INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (2, 'm002_vectors', '2026-11-27 09:07:32.869233+00');
INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (3, 'm003_text_search', '2026-11-27 09:07:32.869233+00');
INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (4, 'm004_users_and_api_keys', '2026-11-27 09:07:32.869233+00');
INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (5, 'm005_passage_supersession', '2026-11-27 09:07:32.869233+00');
INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (6, 'm006_block_history', '2026-11-27 09:07:32.869233+00');
INSERT INTO public.memgpt_lite_migrations OVERRIDING SYSTEM VALUE VALUES (7, 'm007_reflected_seq', '2026-11-27 09:07:32.869233+00');


--
-- Data for Name: messages; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (1, 'msg-1', 'agent-sam', 'user', 'I like green tea', NULL, NULL, NULL, 'step-1', '2025-03-01 09:40:00+00', 'I like green tea', '''green'':3 ''i'':1 ''like'':2 ''tea'':4', 4);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (2, 'msg-2', 'agent-sam', 'assistant', 'thinking', '[{"id": "call-1", "name": "send_message", "arguments": "{\"message\": \"Noted!\"}"}]', NULL, NULL, 'step-1', '2025-03-01 09:41:00+00', 'thinking
Noted!', '''note'':2 ''think'':1', 2);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (3, 'msg-3', 'agent-sam', 'tool', '{"status": "OK"}', NULL, 'call-1', 'send_message', 'step-1', '2025-03-01 09:42:00+00', NULL, NULL, 0);


--
-- Data for Name: passages; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.passages OVERRIDING SYSTEM VALUE VALUES (1, 'passage-cat', 'agent-sam', 'Sam''s cat is named Miso', 'we talked about pets', '{pets}', 'a068a6e8d9e07248cac48c101828c77a77c768a0dd3f0ba180dd397a18d5359b', '2025-03-01 09:50:00+00', '''about'':9 ''cat'':3A ''is'':4A ''miso'':6A ''name'':5A ''pet'':10 ''s'':2A ''sam'':1A ''talk'':8 ''we'':7', 10, NULL, NULL);
INSERT INTO public.passages OVERRIDING SYSTEM VALUE VALUES (3, 'passage-lisbon', 'agent-sam', 'Sam lives in Lisbon', '', '{places}', '86bd806753f5a345f93b9ccc0f4e1f3877949b04c97ff472e47deb01e667e011', '2025-04-10 09:30:00+00', '''in'':3A ''lisbon'':4A ''live'':2A ''sam'':1A', 4, NULL, NULL);
INSERT INTO public.passages OVERRIDING SYSTEM VALUE VALUES (2, 'passage-porto', 'agent-sam', 'Sam lives in Porto', '', '{places,home}', '61a4530f1f15118a7034713bcdc41f97424636eb48759a536b16caf68019a3af', '2025-03-01 09:51:00+00', '''in'':3A ''live'':2A ''porto'':4A ''sam'':1A', 4, 'passage-lisbon', '2025-04-10 09:30:00+00');


--
-- Data for Name: settings; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.settings VALUES ('search_language', 'english');


--
-- Data for Name: step_locks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.step_locks VALUES ('agent-kim', 'old-token', 1, 'old-host', 'old-host-id', '', 1795770453.3667123, 1795770453.3667123, 1795770513.3667123);


--
-- Data for Name: token_usage; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.token_usage OVERRIDING SYSTEM VALUE VALUES (1, 'agent-sam', 'step-1', 'gpt-4o-mini', 100, 10, 110, 1, false, '2025-03-01 09:43:00+00');
INSERT INTO public.token_usage OVERRIDING SYSTEM VALUE VALUES (2, 'agent-sam', 'step-1', 'gpt-4o-mini', 120, 10, 130, 1, false, '2025-03-01 09:43:00+00');
INSERT INTO public.token_usage OVERRIDING SYSTEM VALUE VALUES (3, 'agent-sam', 'step-1', 'gpt-4o', 50, 10, 60, 1, false, '2025-03-01 09:43:00+00');


--
-- Data for Name: vectors; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.vectors OVERRIDING SYSTEM VALUE VALUES (1, 'agent-sam', 'passage', 1, 4, '\xd9625b3e7565023f34c5513edfd14ebf');
INSERT INTO public.vectors OVERRIDING SYSTEM VALUE VALUES (2, 'agent-sam', 'passage', 2, 4, '\x07b6343fd931b23ea75ad6be25fce73e');
INSERT INTO public.vectors OVERRIDING SYSTEM VALUE VALUES (3, 'agent-sam', 'passage', 3, 4, '\xdb88013f8903d13ec893213d0a40423f');
INSERT INTO public.vectors OVERRIDING SYSTEM VALUE VALUES (4, 'agent-sam', 'message', 1, 4, '\xf290983ddeed52bed8ab26be7f4876bf');


--
-- Name: block_history_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.block_history_seq_seq', 3, true);


--
-- Name: memgpt_lite_migrations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.memgpt_lite_migrations_id_seq', 7, true);


--
-- Name: messages_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.messages_seq_seq', 3, true);


--
-- Name: passages_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.passages_seq_seq', 3, true);


--
-- Name: token_usage_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.token_usage_seq_seq', 3, true);


--
-- Name: vectors_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.vectors_id_seq', 4, true);


--
-- Name: agent_blocks agent_blocks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_blocks
    ADD CONSTRAINT agent_blocks_pkey PRIMARY KEY (agent_id, block_id);


--
-- Name: agents agents_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_name_key UNIQUE (name);


--
-- Name: agents agents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_pkey PRIMARY KEY (id);


--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: block_history block_history_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.block_history
    ADD CONSTRAINT block_history_pkey PRIMARY KEY (seq);


--
-- Name: blocks blocks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.blocks
    ADD CONSTRAINT blocks_pkey PRIMARY KEY (id);


--
-- Name: memgpt_lite_migrations memgpt_lite_migrations_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memgpt_lite_migrations
    ADD CONSTRAINT memgpt_lite_migrations_name_key UNIQUE (name);


--
-- Name: memgpt_lite_migrations memgpt_lite_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memgpt_lite_migrations
    ADD CONSTRAINT memgpt_lite_migrations_pkey PRIMARY KEY (id);


--
-- Name: messages messages_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_id_key UNIQUE (id);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (seq);


--
-- Name: passages passages_agent_id_text_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.passages
    ADD CONSTRAINT passages_agent_id_text_hash_key UNIQUE (agent_id, text_hash);


--
-- Name: passages passages_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.passages
    ADD CONSTRAINT passages_id_key UNIQUE (id);


--
-- Name: passages passages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.passages
    ADD CONSTRAINT passages_pkey PRIMARY KEY (seq);


--
-- Name: settings settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (key);


--
-- Name: step_locks step_locks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.step_locks
    ADD CONSTRAINT step_locks_pkey PRIMARY KEY (agent_id);


--
-- Name: token_usage token_usage_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.token_usage
    ADD CONSTRAINT token_usage_pkey PRIMARY KEY (seq);


--
-- Name: vectors vectors_owner_item_seq_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vectors
    ADD CONSTRAINT vectors_owner_item_seq_key UNIQUE (owner, item_seq);


--
-- Name: vectors vectors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vectors
    ADD CONSTRAINT vectors_pkey PRIMARY KEY (id);


--
-- Name: agent_blocks_block; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX agent_blocks_block ON public.agent_blocks USING btree (block_id);


--
-- Name: agents_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX agents_owner ON public.agents USING btree (owner, name);


--
-- Name: api_keys_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_keys_created ON public.api_keys USING btree (created_at);


--
-- Name: block_history_block; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX block_history_block ON public.block_history USING btree (block_id, seq);


--
-- Name: messages_agent_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_agent_created ON public.messages USING btree (agent_id, created_at);


--
-- Name: messages_agent_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_agent_seq ON public.messages USING btree (agent_id, seq);


--
-- Name: messages_search; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_search ON public.messages USING gin (search_vector);


--
-- Name: passages_agent_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX passages_agent_created ON public.passages USING btree (agent_id, created_at);


--
-- Name: passages_agent_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX passages_agent_seq ON public.passages USING btree (agent_id, seq);


--
-- Name: passages_search; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX passages_search ON public.passages USING gin (search_vector);


--
-- Name: passages_superseded; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX passages_superseded ON public.passages USING btree (agent_id, superseded_by) WHERE (superseded_by IS NOT NULL);


--
-- Name: token_usage_agent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX token_usage_agent ON public.token_usage USING btree (agent_id, model);


--
-- Name: token_usage_step; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX token_usage_step ON public.token_usage USING btree (agent_id, step_id);


--
-- Name: vectors_agent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX vectors_agent ON public.vectors USING btree (agent_id, owner, id);


--
-- Name: agent_blocks agent_blocks_agent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_blocks
    ADD CONSTRAINT agent_blocks_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;


--
-- Name: agent_blocks agent_blocks_block_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_blocks
    ADD CONSTRAINT agent_blocks_block_id_fkey FOREIGN KEY (block_id) REFERENCES public.blocks(id) ON DELETE CASCADE;


--
-- Name: block_history block_history_block_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.block_history
    ADD CONSTRAINT block_history_block_id_fkey FOREIGN KEY (block_id) REFERENCES public.blocks(id) ON DELETE CASCADE;


--
-- Name: messages messages_agent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;


--
-- Name: passages passages_agent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.passages
    ADD CONSTRAINT passages_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;


--
-- Name: step_locks step_locks_agent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.step_locks
    ADD CONSTRAINT step_locks_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;


--
-- Name: token_usage token_usage_agent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.token_usage
    ADD CONSTRAINT token_usage_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;


--
-- Name: vectors vectors_agent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vectors
    ADD CONSTRAINT vectors_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict w91obsk7b03A1H8jYatx9KD06riYfEGBaMVwqCic8v518ZPqe1ustejpxyeOcbg

