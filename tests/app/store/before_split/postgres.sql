--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: audit; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit (
    chain text NOT NULL,
    seq integer NOT NULL,
    "time" double precision NOT NULL,
    request_id text NOT NULL,
    client text,
    principal text,
    operation text NOT NULL,
    key_name text,
    key_version text,
    status integer NOT NULL,
    problem text,
    details text NOT NULL,
    mac bytea NOT NULL
);


--
-- Name: audit_heads; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_heads (
    chain text NOT NULL,
    seq integer NOT NULL,
    tag bytea NOT NULL
);


--
-- Name: audit_key; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_key (
    id integer NOT NULL,
    wrapped bytea NOT NULL
);


--
-- Name: fe_bases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fe_bases (
    name text NOT NULL,
    version integer NOT NULL,
    basis text NOT NULL
);


--
-- Name: fe_functions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fe_functions (
    name text NOT NULL,
    version integer NOT NULL,
    seq integer NOT NULL,
    function text NOT NULL,
    principal text NOT NULL,
    "time" double precision NOT NULL,
    rank integer NOT NULL
);


--
-- Name: key_versions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.key_versions (
    name text NOT NULL,
    version integer NOT NULL,
    created_at double precision NOT NULL,
    wrapped bytea NOT NULL,
    public bytea,
    term integer
);


--
-- Name: keyring; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.keyring (
    term integer NOT NULL,
    wrapped bytea NOT NULL,
    created_at double precision NOT NULL
);


--
-- Name: keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.keys (
    name text NOT NULL,
    type text NOT NULL,
    params text NOT NULL,
    exportable integer NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    latest_version integer NOT NULL,
    state text DEFAULT 'active'::text NOT NULL,
    deletion_date double precision,
    deletion_protection integer DEFAULT 0 NOT NULL,
    min_decryption_version integer DEFAULT 1 NOT NULL,
    min_encryption_version integer DEFAULT 0 NOT NULL,
    auto_rotate_seconds double precision
);


--
-- Name: root_key_check; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.root_key_check (
    id integer NOT NULL,
    wrapped bytea NOT NULL
);


--
-- Name: tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tokens (
    id text NOT NULL,
    token_hash bytea NOT NULL,
    description text NOT NULL,
    key_patterns text NOT NULL,
    operations text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision,
    rate_per_second double precision
);


--
-- Name: wrapping_key; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.wrapping_key (
    id integer NOT NULL,
    wrapped bytea NOT NULL,
    public bytea NOT NULL
);


--
-- Data for Name: audit; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit VALUES ('@chains', 1, 1796273188.599294, '0f13c561c9eac3b42ce30958faad2c34', NULL, 'system', 'audit_chain_begun', NULL, NULL, 200, NULL, '{"chain":"rd13c01f3be3dd415"}', '\x3799431a6a7b3ceab0aaa66984f1b9140051d3a6bbc340b48f18de5da69c8ef5');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 1, 1796273188.4529731, '390c920c586949700000000000000001', 'testclient', 'admin', 'keys_create_key', 'session', NULL, 201, NULL, '{}', '\x3ce9928d6616625f7f11759c30272ea6fb76bf00a7aa84bfe3833335d7ff1cf8');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 2, 1796273188.550252, '390c920c586949700000000000000002', 'testclient', 'admin', 'aez_encrypt', 'session', '1', 200, NULL, '{}', '\xe16f5ebdce864be60c4f5ae1d079cfe32301e34ff502ddb7eaf355f3feeb6cad');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 3, 1796273188.5542219, '390c920c586949700000000000000003', 'testclient', 'admin', 'keys_rotate_key', 'session', '2', 200, NULL, '{}', '\x7f43264347bac19a207d6c6c961501c6ccd784aafb2a3419e006b5f0c764d1d7');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 4, 1796273188.5593886, '390c920c586949700000000000000004', 'testclient', 'admin', 'aez_encrypt', 'session', '2', 200, NULL, '{}', '\x755939533003ce062e7b1da016133505142b90ba30b3c94b7404c14d6e87b467');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 5, 1796273188.570792, '390c920c586949700000000000000005', 'testclient', 'admin', 'keys_create_key', 'mail', NULL, 201, NULL, '{}', '\x85d7d690bcf03fc52fd7fd3c7d7c40face1d8a94548ec739d97d8bcfdcb551cb');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 6, 1796273188.5778174, '390c920c586949700000000000000006', 'testclient', 'admin', 'ecies_encrypt', 'mail', '1', 200, NULL, '{}', '\x7206bf37bc4d9199b9d76836eaab8c789cd886668773b2091195fe19e49dd13c');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 7, 1796273188.580594, '390c920c586949700000000000000007', 'testclient', 'admin', 'keys_create_key', 'signer', NULL, 201, NULL, '{}', '\xeb92dda1443ae063beb0e1234e1c8495ac7053daa32c8254712427a116b0078e');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 8, 1796273188.5966523, '390c920c586949700000000000000008', 'testclient', 'admin', 'sign_sign', 'signer', '1', 200, NULL, '{}', '\xd7a6e999170e306670cbd6b811fd499e032e1a0198e745f25367862b7c274966');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 9, 1796273188.6018684, '390c920c586949700000000000000009', 'testclient', 'admin', 'keys_create_key', 'mac', NULL, 201, NULL, '{}', '\xde5bd799f8fef414b112b403c4ff994deda43983310156167f11145ada073643');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 10, 1796273188.6212633, '390c920c58694970000000000000000a', 'testclient', 'admin', 'hmac_hmac', 'mac', '1', 200, NULL, '{}', '\xc9212a1245a86d2e91ccc5db529641aeb16c0cbd3d5e15c8154073a026d2a5c8');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 11, 1796273188.623855, '390c920c58694970000000000000000b', 'testclient', 'admin', 'keys_create_key', 'scores', NULL, 201, NULL, '{}', '\xd460c589a1eb3890fa69675c2f4e622709df560058d15150427108cac552053b');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 12, 1796273188.629302, '390c920c58694970000000000000000c', 'testclient', 'admin', 'fe_encrypt', 'scores', '1', 200, NULL, '{}', '\x26e17cf3fca96e375d4fb10253176b94b9674e80a2f705b0bc609a4762784eb2');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 13, 1796273188.6319747, '390c920c58694970000000000000000d', 'testclient', 'admin', 'fe_keygen', 'scores', '1', 200, NULL, '{"dimension":3,"function":[1,2,3],"function_sha256":"a615eeaee21de5179de080de8c3052c8da901138406ba71c38c032845f7d54f4"}', '\x206e76c6ab32502f4d95758aacb9e28dca8d2c7133b75c4026287dd038965359');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 14, 1796273188.6661768, '390c920c58694970000000000000000e', 'testclient', 'admin', 'fe_keygen', 'scores', '1', 200, NULL, '{"dimension":3,"function":[0,1,0],"function_sha256":"b478c82900a216d741ae56917973ab7e435ca61a52b209649be1150d04f239ef"}', '\x1369287bf9251e2bc05207b7e3d0a1365105d8860f134f971692e300951cd8fd');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 15, 1796273188.6832654, '390c920c58694970000000000000000f', 'testclient', 'admin', 'keys_create_key', 'old', NULL, 201, NULL, '{}', '\x86431f07c205419176e0d3607c929d7570e1704560d1813466647e6e9465a64f');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 16, 1796273188.6901827, '390c920c586949700000000000000010', 'testclient', 'admin', 'keys_rotate_key', 'old', '2', 200, NULL, '{}', '\x645650fce6253e57cf7d99dbe90ed7457122985e754ea97b46fee67f6a436ec6');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 17, 1796273188.7044296, '390c920c586949700000000000000011', 'testclient', 'admin', 'keys_rotate_key', 'old', '3', 200, NULL, '{}', '\x532ebea93974d27837ee99be00b33d3b7a12b4cc6261a84fa1cf647b98ef1624');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 18, 1796273188.7139528, '390c920c586949700000000000000012', 'testclient', 'admin', 'keys_rotate_key', 'old', '4', 200, NULL, '{}', '\xc88b3052c0b52a4785f1bd804c607cd1f7dbaffb857ee5b6eacbd8cda98f8746');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 19, 1796273188.73852, '390c920c586949700000000000000013', 'testclient', 'admin', 'keys_patch_key', 'old', NULL, 200, NULL, '{"auto_rotate_seconds":86400,"min_decryption_version":3}', '\x751da3ca2eb2bf48b4645d41b68b2ee33c3b6c5c5ca1f50dbe2f34ece338405b');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 20, 1796273188.7459223, '390c920c586949700000000000000014', 'testclient', 'admin', 'keys_trim_key', 'old', NULL, 200, NULL, '{"destroyed_versions":[1,2]}', '\x1b7919454f0ef704f4e5a7b1ae7f427f98eed181dd665e1a7e1e9e665780e51f');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 21, 1796273188.7702515, '390c920c586949700000000000000015', 'testclient', 'admin', 'keys_create_key', 'guarded', NULL, 201, NULL, '{}', '\x70d515b68cb484541944d274fd52e921dcb768352160bf9cf774ae9989a46de3');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 22, 1796273188.7737236, '390c920c586949700000000000000016', 'testclient', 'admin', 'keys_create_key', 'doomed', NULL, 201, NULL, '{}', '\x3748f2e88548b790f6ac0238295f065a362d06d49060895615ba970a67cd52f3');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 23, 1796273188.7815654, '390c920c586949700000000000000017', 'testclient', 'admin', 'keys_delete_key', 'doomed', NULL, 202, NULL, '{}', '\xa8c535f30e6bedbc7c5cdac33cf908675e53b4968b52592fc542caa030fb6d89');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 24, 1796273188.794444, '390c920c586949700000000000000018', 'testclient', 'admin', 'tokens_create_token', NULL, NULL, 201, NULL, '{"keys":["session"],"operations":["decrypt","encrypt"],"token":"d8bfe783c0a69770"}', '\x0272d2b2c83890db0e27a21974567975a1d2f7464203bb25f745f2b455c8f56d');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 25, 1796273188.7994475, '390c920c586949700000000000000019', 'testclient', 'admin', 'sys_wrapping_key', NULL, NULL, 200, NULL, '{}', '\x4c2b874b05cbf6bf1b5db66b16cc90ac5b03c280cd64766b4b5bf2df3520f1c6');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 26, 1796273188.80229, '390c920c58694970000000000000001a', 'testclient', 'admin', 'sys_rotate_keyring', NULL, NULL, 200, NULL, '{"term":2}', '\xc60323db422bec0d7eb614fb0b0ae8a2500d06afa6092e11bb8fa46a72cfffe0');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 27, 1796273188.8319883, '390c920c58694970000000000000001b', 'testclient', 'admin', 'keys_list_keys', NULL, NULL, 200, NULL, '{}', '\x3bcf3985b2a2bc28a3f412a5d9dd3f6a97ab9692cf8631869e967454fbac949c');
INSERT INTO public.audit VALUES ('rd13c01f3be3dd415', 28, 1796273188.840359, '390c920c58694970000000000000001c', 'testclient', 'admin', 'fe_functions', 'scores', NULL, 200, NULL, '{}', '\xe12ed092701373dd4fac665f3dcc596b8ae83ce890496f55889b57cb6b2561ea');


--
-- Data for Name: audit_heads; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit_heads VALUES ('@chains', 1, '\x58ad26805170acf4489c566b6b7e84cb240fe2718316317a935deba431c8ade5');
INSERT INTO public.audit_heads VALUES ('rd13c01f3be3dd415', 28, '\xebbcec2ac7f27a3c81d8530d108aa344061ee7fa8f6535d4360ebb832d2fff2b');


--
-- Data for Name: audit_key; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit_key VALUES (1, '\x317f77f7f7b6e22de85cdd78a1a0532ba3c0024d2dea1fc981e69fa1083fd52787b12429578ceece004352bc0a5e35e5ee99c3be60d2cac4cf0539a9');


--
-- Data for Name: fe_bases; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fe_bases VALUES ('scores', 1, '[[1, 2, 3], [0, 1, 0]]');


--
-- Data for Name: fe_functions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fe_functions VALUES ('scores', 1, 1, '[1, 2, 3]', 'admin', 1796273188.6525793, 1);
INSERT INTO public.fe_functions VALUES ('scores', 1, 2, '[0, 1, 0]', 'admin', 1796273188.667735, 2);


--
-- Data for Name: key_versions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.key_versions VALUES ('session', 1, 1796273188.496116, '\x709dc9fe5665d17153d5a4f0105460949c9c65d09768c3e762bb0d1787ddff1c08eb5e65b77f6df9b95ab22c375c471626297111b45fa1baed6e6aee9a1a99ba51c3d83065d4aa27e035a656', NULL, 1);
INSERT INTO public.key_versions VALUES ('session', 2, 1796273188.555655, '\x0bd58f126f9ef977c624b9cc2da99fc5ec2931a85a1f5c3eea7587190f5c28e829a4ada55e9a2cde89a6066126a219060e29b7c2dda1e90d7ba2f9b0d9c9b8caeef2c624618c652abade9bc5', NULL, 1);
INSERT INTO public.key_versions VALUES ('mail', 1, 1796273188.571555, '\xc5a63d3c1acb2729388c971bb9219877cb2b431f14b88da26af955ced05535dbaba2b7bbf0463706647deb9528d4c72d00c37d0893b1b92f3867d139', '\xb9ce23b9615adb91a2e37116be51112e6b803d066804223cd259480419eaa33f', 1);
INSERT INTO public.key_versions VALUES ('signer', 1, 1796273188.5813975, '\x9a9fd1887ea01679d80a74b7448f82fdd8a3e69a54ad8a9016706961af79a53480a699c45bbf53ec08392d75f621c61c23dd7bcb1ca8969b3029c813', '\x00fc6f5cd4fd04d49abfdffd9f8923a2dcf2efaf0fc39d96045eec16f207de28', 1);
INSERT INTO public.key_versions VALUES ('mac', 1, 1796273188.6024344, '\x5a0aa3cde543c983be4dc1451beb465ef2a1a9cb0c017bdc00c7577fcd4f522c5c67b88346a76c1c39c36a1d97d628663e0676316a00e6c5281920d3b44be085bf70cb73d8ff7c2ca938ed55fca62de43cdf58a54dcb9d9df4b67ddd', NULL, 1);
INSERT INTO public.key_versions VALUES ('scores', 1, 1796273188.624653, '\x1a8f0cde93bf9bf94cb6ad7b231576800420d20738d172e6e9ec4cbb5bff8f4a2ab87a28e75b44b1379fb77527264f6e5588a6617cdb316b4a9eff740d373b96d3ef72885456a54bf0c5778dea084fbde8bac5342e0417b49fdcbbc31b65470bdaaf11faf55cabd3036b60c1c2d7649fa3d51e657b4cabfe435d85d1e1c7f01971547ec0d49a646ff44ff206b8d71a9ce1df2f990e5142c66652f690092a1fba1d6482038b920411b0c1f272f10414caadcdc41aaea1feeeb3405c7543be289d2b6ce3069098d56795a784fbad68ee12343ad5fa37f7a949dd80d4733253a22582311d942a23ec06bf9dea4f954be5b4e171672dde027472a8a647d7a309fb4112f7eead14edf0d9fe71f3f4bc8130e927b22c0a86f21bb85c15f84e409707ddfaa98f7e53ed77361c77867192ecbddef83c411915d405382fca7f830684a1b58e4befa660c74c2eb9b0fb4dbf561fc72c5f01e5ec16c33eca17bb01ba4a68c7fb9446f2a1ac4e199d26432388bcfef650c3500e5f824a6d528085e6d26aba49813e8da7c84459e6bb95f21bde5b8c039d2bcfc7f6e578a96ae0e59d05e48a72cbe03d36b42dc45e63e58f12f83fe3657e7620dad32fc84f085e49fe7191902034388ba460e7c22b0fe42630a5b9f8d16bae45bc38ff85ca0348b7e9f6151498a936ce4c76380138885a07dc04e97ea045ac5a07716e224628ad8233c2288c7c34ffbc1e31435362a8437a9d0b9e6563f8ee118aa4a0e57e0f0b693974278f8645396bea5a9d7490255fb8a54de57921487bf0bc5833b0258405195815e7b9b8e912c1aa06188d5a00b3764ac67396ca10d19ad5597c7316efba6e29252aa403969bc435b54a83f2683b4970eba910c5e9b46f904ee44d58801282cde9b7ba04271d696d447d214b7f15f98ef48ea3c34d20cc989c8a663937101f00e15931d64e5cd9e8db4af67f3b912e2348c6ed5c040e6d6f0dd34f9aea7671f071409db30eb930fd3ff13e960533a24c164ad8939aeeadd21ce80f2032d55b71805e93e98e89c240781f70c72b7e2130b957c3d2ade9d7bcfb26a2f4080b0b3856fac28df11d879c9b6d4ed224a69ccfcb72b7e99ce4fc416528acd6e934607a361a57ee34781454527d6d3ded3b5be24a3e5e03f8927b401ad722849d6ff8c3b39f60fa596f0e0dba76f6fbb9377ca198447625a7dbbf3d7b1cc8c91c7bbe1aff0dc554c8a048b789adb105bbb2324040542a3bd96466060a6f305fbc48fa45aa65d21f2ae3c5cea51d6b0ce351b1e34a94441eebf33a86bf4ad7701dcec03bede34b1d14efa94b675e3ad86830808c3542a19a6d8f51f303b9de99e6ccd5637da001ee22d0cfea1446db889c1207b5c095c6f3b11fb93753735d49ea874b2bff0a4b2458c6349340a22f96f7d78b25187865bc4d68f4b766d1443b6a18a57164badf346c494ec6ccff0faa847ac0e2fe9aba0523a311f5882f2f508bd0fd3884690e21bbf7247c065bc6e828fd7b339ca40b753aaafb15201a78fa1f0821cf37eddd822b4106e3357b805dd78bd89202d1f3748ca236604cd4be713312bebec874a1c61d18ea1c0d6a12f3a8bcc465cde0e3b03a57502079786638a3680248eba779acae89daaffe8d1e9826863f7422ce8ed8561c5caabdbdafc018b2a44f83a0dc1d81380ec26b491e03be7e07ac71ffc96a2e91dccfae415a54059d3431c0a2d2662cfcd3a0df23f7aae3494bc7f8fcaa525d92324e9bd47ad980d764498a91888eaf96ecea96f1a779db463f3c27dd53', NULL, 1);
INSERT INTO public.key_versions VALUES ('old', 3, 1796273188.7061176, '\x5ce87cd80f2cc0eaba142f4122038af28564455b8eb240e7900d5711c53997fef7ef5639523fdede910704a4898aac50bbe4b78bf7f8170e78d3da91bb498dbdd1ebcbcf7effa63269969392', NULL, 1);
INSERT INTO public.key_versions VALUES ('old', 4, 1796273188.7194548, '\xb7fe447161bc6f1643371d5d54b70e5f8f313ff20e01d21fa5abab8d0367c38185cea43ddd3d23adf355082159737dbea83a50262cf1f547b7dc6a12172c1839408eff5b5b417105159c9bf0', NULL, 1);
INSERT INTO public.key_versions VALUES ('guarded', 1, 1796273188.770794, '\xdb1e559ed466cc0cd873302e0cc019dfdddc9260266ad71b9af4fbbc0468bf063bd7566aefa87e9a4c4a3eeb4d586c7695f2ade4ee8c8e495d34494b973f28fafc84a57f42b021a60cefc8a5', NULL, 1);
INSERT INTO public.key_versions VALUES ('doomed', 1, 1796273188.7741294, '\x6eccee10bd79fba2379528dd9677444bf75b0edfd3611169ee04c0f3e4225baa7dd0cd39a04286ef1adf0354e04c2aae540f81aa9854b62431db08524f61fa709fae16d0beb80b4f5ff5a0f7', NULL, 2);


--
-- Data for Name: keyring; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.keyring VALUES (1, '\xaa4bf06fa60425d1ff10b00bfa8a5bbbccd44eff0277f23ae879d068dc175b3fc3eecd3324f9d6ae0a5be91c2afee8e83f40143cf19d80ae407ceb75', 1796273188.4337895);
INSERT INTO public.keyring VALUES (2, '\xb57e3e1dc20f716add63cc2936804b84e57a6704640dbb07b3e70c9c09e995034555545d897f11556a2808b6056703bda5894ceb408214d8ee592549', 1796273188.819756);


--
-- Data for Name: keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.keys VALUES ('session', 'aez', '{"allow_backup": true}', 0, 1796273188.496116, 1796273188.555655, 2, 'active', NULL, 0, 1, 0, NULL);
INSERT INTO public.keys VALUES ('mail', 'ecies-x25519', '{}', 0, 1796273188.571555, 1796273188.571555, 1, 'active', NULL, 0, 1, 0, NULL);
INSERT INTO public.keys VALUES ('signer', 'ed25519', '{}', 0, 1796273188.5813975, 1796273188.5813975, 1, 'active', NULL, 0, 1, 0, NULL);
INSERT INTO public.keys VALUES ('mac', 'hmac', '{}', 0, 1796273188.6024344, 1796273188.6024344, 1, 'active', NULL, 0, 1, 0, NULL);
INSERT INTO public.keys VALUES ('scores', 'ipfe-opt', '{"dimension": 3, "curve": "bls12-381", "fe_policy": {"max_rank": 2, "allow_multiples": false}}', 0, 1796273188.624653, 1796273188.624653, 1, 'active', NULL, 0, 1, 0, NULL);
INSERT INTO public.keys VALUES ('old', 'aez', '{}', 0, 1796273188.683941, 1796273188.7643373, 4, 'active', NULL, 0, 3, 0, 86400);
INSERT INTO public.keys VALUES ('guarded', 'aez', '{}', 0, 1796273188.770794, 1796273188.770794, 1, 'active', NULL, 1, 1, 0, NULL);
INSERT INTO public.keys VALUES ('doomed', 'aez', '{}', 0, 1796273188.7741294, 1796273188.78251, 1, 'pending-deletion', 1798865188.7821147, 0, 1, 0, NULL);


--
-- Data for Name: root_key_check; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.root_key_check VALUES (1, '\xd786800f714770ccc888c8171f8d36745fdacae793234793358f61d061280e0de9c7ddf575043f5feea042a6600630bcbca6');


--
-- Data for Name: tokens; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tokens VALUES ('d8bfe783c0a69770', '\x44e3316e125915d24bee5a8903cec58369d05b2e3e6524048719b4df2ba16bde', '', '["session"]', '["decrypt", "encrypt"]', 1796273188.7951014, NULL, NULL);


--
-- Data for Name: wrapping_key; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.wrapping_key VALUES (1, '\x4a364830789a0b5a6625dfbf94859ee5abab911915d8bd893766695693c77c6a399930ceea02da7767a2e96006277a69c1aa12d07f7a9f0b2ae5ab05', '\x0474c736610b38072ab17ee6debf461a8851608bc72b19c48b046e6727486d71f77513f3fa3a3f1f7120109a7656936cbc46d318022143536d932db58a77fed601');


--
-- Name: audit_heads audit_heads_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_heads
    ADD CONSTRAINT audit_heads_pkey PRIMARY KEY (chain);


--
-- Name: audit_key audit_key_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_key
    ADD CONSTRAINT audit_key_pkey PRIMARY KEY (id);


--
-- Name: audit audit_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit
    ADD CONSTRAINT audit_pkey PRIMARY KEY (chain, seq);


--
-- Name: fe_bases fe_bases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fe_bases
    ADD CONSTRAINT fe_bases_pkey PRIMARY KEY (name, version);


--
-- Name: fe_functions fe_functions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fe_functions
    ADD CONSTRAINT fe_functions_pkey PRIMARY KEY (name, version, seq);


--
-- Name: key_versions key_versions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.key_versions
    ADD CONSTRAINT key_versions_pkey PRIMARY KEY (name, version);


--
-- Name: keyring keyring_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.keyring
    ADD CONSTRAINT keyring_pkey PRIMARY KEY (term);


--
-- Name: keys keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.keys
    ADD CONSTRAINT keys_pkey PRIMARY KEY (name);


--
-- Name: root_key_check root_key_check_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.root_key_check
    ADD CONSTRAINT root_key_check_pkey PRIMARY KEY (id);


--
-- Name: tokens tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (id);


--
-- Name: tokens tokens_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_token_hash_key UNIQUE (token_hash);


--
-- Name: wrapping_key wrapping_key_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.wrapping_key
    ADD CONSTRAINT wrapping_key_pkey PRIMARY KEY (id);


--
-- Name: audit_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_time ON public.audit USING btree ("time", chain, seq);


--
-- Name: fe_bases fe_bases_name_version_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fe_bases
    ADD CONSTRAINT fe_bases_name_version_fkey FOREIGN KEY (name, version) REFERENCES public.key_versions(name, version) ON DELETE CASCADE;


--
-- Name: fe_functions fe_functions_name_version_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fe_functions
    ADD CONSTRAINT fe_functions_name_version_fkey FOREIGN KEY (name, version) REFERENCES public.key_versions(name, version) ON DELETE CASCADE;


--
-- Name: key_versions key_versions_name_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.key_versions
    ADD CONSTRAINT key_versions_name_fkey FOREIGN KEY (name) REFERENCES public.keys(name) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


